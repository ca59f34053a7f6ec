package binlog_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/changestream/streamtest"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConformance runs the change-stream readers' conformance suite on
// MariaDB's binlog, each test with a database of its own, streamed by a
// user of its own (so that Disconnect finds the test's stream among the
// server's).
func TestConformance(t *testing.T) {
	streamtest.Run(t, func(t testing.TB, cfg changestream.Config) streamtest.Harness {
		d := testenv.NewHeraldDatabaseOn(t, testenv.MariaDB)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		user, db, dsn := streamUser(t, d)
		src, err := binlog.NewSource(ctx, db, binlog.Config{DSN: dsn, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		d.Exec(t, "CREATE TABLE neighbour (id BIGINT AUTO_INCREMENT PRIMARY KEY, note TEXT NOT NULL)")
		d.Exec(t, "CREATE TABLE aside (id BIGINT AUTO_INCREMENT PRIMARY KEY) ENGINE=MyISAM")
		triggerDropped := false
		return streamtest.Harness{
			DB: d.DB, Dialect: d.Dialect, Source: src,
			WriteNeighbour: func(t testing.TB) { d.Exec(t, "INSERT INTO neighbour (note) VALUES ('busy')") },
			// A binlog file the server purged long ago (its first): what a
			// checkpoint older than the server's binlogs names.
			Lose: func(testing.TB, string) string { return "file:mariadb-bin.000000:4" },
			Disconnect: func(t testing.TB) int {
				streams := testenv.Strings(t, db, `SELECT ID FROM information_schema.PROCESSLIST
					WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%'`, user)
				for _, id := range streams {
					if _, err := db.Exec("KILL " + id); err != nil { // its own connection: no grant needed
						t.Fatal(err)
					}
				}
				return len(streams)
			},
			AlterOutbox: func(t testing.TB, i int) {
				if i == 0 {
					d.Exec(t, "ALTER TABLE outbox_events ADD COLUMN extra INT NULL AFTER aggregate_id")
				} else {
					d.Exec(t, "ALTER TABLE outbox_events ADD COLUMN tail VARCHAR(10) NOT NULL DEFAULT 'x'")
				}
			},
			WriteNonTransactional: func(t testing.TB, tx *sql.Tx) {
				if _, err := tx.Exec("INSERT INTO aside () VALUES ()"); err != nil {
					t.Fatal(err)
				}
			},
			InsertUnchecked: func(t testing.TB, r streamtest.Row) bool {
				if !triggerDropped {
					d.Exec(t, "DROP TRIGGER outbox_events_before_insert")
					triggerDropped = true
				}
				var headers any
				if r.Headers != "" {
					headers = r.Headers
				}
				d.Exec(t, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
					schema_version, payload, headers, occurred_at, next_attempt_at)
					VALUES (?, 'order', ?, 1, 'order.created', ?, '{}', ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`,
					r.ID, r.AggregateID, r.SchemaVersion, headers)
				return true // MariaDB's columns take every row the suite writes
			},
			Quote: func(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" },
		}
	})
}

// streamUser creates a user of d's own with the grants streaming needs
// and returns its name, a pool as it, and its DSN.
func streamUser(t testing.TB, d *testenv.Database) (user string, db *sql.DB, dsn string) {
	t.Helper()
	const password = "s3cret-stream"
	user = "herald_st_" + d.Name[len(d.Name)-8:] // the database's random suffix
	testenv.MariaDBRoot(t,
		"CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY '"+password+"'",
		"GRANT ALL PRIVILEGES ON `"+d.Name+"`.* TO '"+user+"'@'127.0.0.1'",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR, PROCESS ON *.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, password
	db, err = mysql.Open(context.Background(), cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return user, db, cfg.FormatDSN()
}
