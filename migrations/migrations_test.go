package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestUpIsIdempotent(t *testing.T) {
	testenv.OnEachServer(t, testUpIsIdempotent)
}

func testUpIsIdempotent(t *testing.T, server testenv.Server) {
	d := testenv.NewDatabaseOn(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := migrations.Herald.Check(ctx, d.DB); err == nil {
		t.Fatal("Check passed on an empty database")
	}
	applied, err := migrations.Herald.Up(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 {
		t.Fatal("first Up applied nothing")
	}
	again, err := migrations.Herald.Up(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("second Up applied %v, want nothing", again)
	}
	if err := migrations.Herald.Check(ctx, d.DB); err != nil {
		t.Errorf("Check after Up: %v", err)
	}
	for _, table := range []string{"outbox_events", "outbox_aggregates", "consumed_events"} {
		var n int
		if err := d.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

// TestConcurrentUpAppliesOnce: four migrators at once apply each migration
// once (a MySQL named lock, a PostgreSQL advisory lock).
func TestConcurrentUpAppliesOnce(t *testing.T) {
	testenv.OnEachServer(t, testConcurrentUpAppliesOnce)
}

func testConcurrentUpAppliesOnce(t *testing.T, server testenv.Server) {
	d := testenv.NewDatabaseOn(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		applied []int64
		err     error
	}
	results := make(chan result, 4)
	for range 4 {
		go func() {
			applied, err := migrations.Herald.Up(ctx, d.DB)
			results <- result{applied, err}
		}()
	}
	var applied []int64
	for range 4 {
		r := <-results
		if r.err != nil {
			t.Errorf("concurrent Up: %v", r.err)
		}
		applied = append(applied, r.applied...)
	}
	st, err := migrations.Herald.Status(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != st.Latest {
		t.Errorf("after concurrent Up: version %d, want %d", st.Current, st.Latest)
	}
	if len(applied) != int(st.Latest) {
		t.Errorf("the migrators applied %v between them, want each of the %d migrations once", applied, st.Latest)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	testenv.OnEachServer(t, testNewerSchemaIsRefused)
}

func testNewerSchemaIsRefused(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A newer herald recorded a migration this binary does not have.
	if _, err := d.DB.ExecContext(ctx,
		"INSERT INTO "+migrations.Herald.Table+" (version_id, is_applied) VALUES (9999, TRUE)"); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Herald.Up(ctx, d.DB)
	if !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Fatalf("Up on a newer schema: got %v, want ErrSchemaTooNew", err)
	}
	t.Logf("refused with: %v", err)
	if err := migrations.Herald.Check(ctx, d.DB); !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Errorf("Check on a newer schema: got %v, want ErrSchemaTooNew", err)
	}
}

// TestSchemasMatch: the PostgreSQL migrations are the MySQL ones, version
// for version and name for name, and they create the same tables and
// columns.
func TestSchemasMatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	columns := map[testenv.Server]map[string][]string{}
	names := map[testenv.Server][]string{}
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		st, err := migrations.Herald.Status(ctx, d.DB)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Migrations {
			names[server] = append(names[server], fmt.Sprintf("%d %s", m.Version, m.Name))
		}
		rows, err := d.DB.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
			WHERE table_schema = `+map[testenv.Server]string{testenv.MariaDB: "DATABASE()", testenv.PostgreSQL: "current_schema()"}[server]+`
			ORDER BY table_name, column_name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		columns[server] = map[string][]string{}
		for rows.Next() {
			var table, column string
			if err := rows.Scan(&table, &column); err != nil {
				t.Fatal(err)
			}
			columns[server][table] = append(columns[server][table], column)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
	if fmt.Sprint(names[testenv.MariaDB]) != fmt.Sprint(names[testenv.PostgreSQL]) {
		t.Errorf("migrations differ:\n mysql    %v\n postgres %v", names[testenv.MariaDB], names[testenv.PostgreSQL])
	}
	for table, cols := range columns[testenv.MariaDB] {
		if table == migrations.Herald.Table {
			continue // goose's own table differs by dialect
		}
		cols = slices.DeleteFunc(cols, func(c string) bool { return mysqlOnly[table+"."+c] })
		if got := columns[testenv.PostgreSQL][table]; fmt.Sprint(got) != fmt.Sprint(cols) {
			t.Errorf("table %s: postgres columns %v, mysql %v", table, got, cols)
		}
	}
	if len(columns[testenv.PostgreSQL]) != len(columns[testenv.MariaDB]) {
		t.Errorf("postgres has %d tables, mysql %d", len(columns[testenv.PostgreSQL]), len(columns[testenv.MariaDB]))
	}
}

// mysqlOnly are the columns only the MySQL schema has, and why.
var mysqlOnly = map[string]bool{
	// A virtual column, the key of idx_handed_over (MySQL has no partial
	// index); PostgreSQL indexes the same rows with a partial index
	// (migration 00007).
	"outbox_events.handed_over_at": true,
}
