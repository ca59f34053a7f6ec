package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestServerCapabilities checks, over TCP as the application user, what
// herald relies on from the server.
func TestServerCapabilities(t *testing.T) {
	d := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var version, user, binlogFormat, timeZone string
	err := d.DB.QueryRowContext(ctx,
		"SELECT VERSION(), CURRENT_USER(), @@GLOBAL.binlog_format, @@SESSION.time_zone").
		Scan(&version, &user, &binlogFormat, &timeZone)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s as %s", version, user)
	if !strings.Contains(version, "MariaDB") && !strings.HasPrefix(version, "8.") && !strings.HasPrefix(version, "9.") {
		t.Errorf("version %q: want MariaDB 10.6+ or MySQL 8.0+", version)
	}
	if !strings.HasPrefix(user, "herald@") {
		t.Errorf("CURRENT_USER() = %q, want the herald application user", user)
	}
	if binlogFormat != "ROW" {
		t.Errorf("binlog_format = %q, want ROW", binlogFormat)
	}
	if timeZone != "+00:00" {
		t.Errorf("session time_zone = %q, want +00:00", timeZone)
	}

	// NOW(6) and Go agree on the instant: the session and the driver are UTC.
	var now time.Time
	if err := d.DB.QueryRowContext(ctx, "SELECT NOW(6)").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if skew := time.Since(now); skew > time.Minute || skew < -time.Minute {
		t.Errorf("NOW(6) = %v is %v away from Go's clock: time zones disagree", now, skew)
	}

	if _, err := d.DB.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB.ExecContext(ctx, "INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}

	// Two transactions: the second skips the row the first has locked.
	tx1, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	var locked int
	if err := tx1.QueryRowContext(ctx, "SELECT id FROM t WHERE id = 1 FOR UPDATE SKIP LOCKED").Scan(&locked); err != nil {
		t.Fatalf("SELECT ... FOR UPDATE SKIP LOCKED: %v", err)
	}
	tx2, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	rows, err := tx2.QueryContext(ctx, "SELECT id FROM t ORDER BY id FOR UPDATE SKIP LOCKED")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 2 {
		t.Errorf("second transaction saw %v, want [2]: SKIP LOCKED did not skip the locked row", got)
	}
}

func TestNormalizeDSN(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"adds utc settings", "u:p@tcp(db:3306)/app",
			"u:p@tcp(db:3306)/app?interpolateParams=true&parseTime=true&time_zone=%27%2B00%3A00%27"},
		{"overrides a local loc", "u:p@tcp(db:3306)/app?loc=Local&parseTime=false",
			"u:p@tcp(db:3306)/app?interpolateParams=true&parseTime=true&time_zone=%27%2B00%3A00%27"},
		{"keeps other params", "u:p@tcp(db:3306)/app?timeout=5s",
			"u:p@tcp(db:3306)/app?interpolateParams=true&parseTime=true&timeout=5s&time_zone=%27%2B00%3A00%27"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mysql.NormalizeDSN(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("NormalizeDSN(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if _, err := mysql.NormalizeDSN("u:secret@tcp(db:3306"); err == nil {
		t.Error("NormalizeDSN accepted a malformed DSN")
	} else if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q leaks the password", err)
	}
}
