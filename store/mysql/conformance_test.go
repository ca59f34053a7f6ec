package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/storetest"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConformance runs the store's conformance suite on MariaDB/MySQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB) storetest.Harness {
		d := testenv.NewHeraldDatabase(t)
		return storetest.Harness{
			Store: mysql.NewStore(d.DB),
			Backdate: func(t testing.TB, by time.Duration, ids ...string) {
				t.Helper()
				shift := fmt.Sprintf("INTERVAL %d MICROSECOND", by.Microseconds())
				exec(t, d.DB, `UPDATE outbox_events SET occurred_at = occurred_at - `+shift+
					`, published_at = published_at - `+shift+`, quarantined_at = quarantined_at - `+shift+
					`, locked_at = locked_at - `+shift+
					`, next_attempt_at = IF(next_attempt_at >= ?, next_attempt_at, next_attempt_at - `+shift+`)
					WHERE id IN (`+marks(len(ids))+`)`, append([]any{(mysql.Dialect{}).Never()}, anys(ids)...)...)
				exec(t, d.DB, `UPDATE outbox_failures SET failed_at = failed_at - `+shift+`
					WHERE event_id IN (`+marks(len(ids))+`)`, anys(ids)...)
			},
			BackdateConsumed: func(t testing.TB, by time.Duration, consumer string, ids ...string) {
				t.Helper()
				exec(t, d.DB, fmt.Sprintf(`UPDATE consumed_events SET consumed_at = consumed_at - INTERVAL %d MICROSECOND
					WHERE consumer_name = ? AND event_id IN (%s)`, by.Microseconds(), marks(len(ids))),
					append([]any{consumer}, anys(ids)...)...)
			},
			OpenInZone: func(t testing.TB, zone string) *sql.DB {
				t.Helper()
				return openInZone(t, d.DSN, zone)
			},
			DropTrigger: func(t testing.TB) {
				t.Helper()
				d.Exec(t, "DROP TRIGGER outbox_events_before_insert")
			},
			InsertRaw: func(t testing.TB, r storetest.RawRow) error {
				t.Helper()
				ctx := context.Background()
				conn, err := d.DB.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if r.ChecksOff {
					exec(t, conn, "SET SESSION check_constraint_checks = 0")
					defer exec(t, conn, "SET SESSION check_constraint_checks = 1")
				}
				var headers any
				if r.Headers != nil {
					headers = r.Headers
				}
				_, err = conn.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
					event_type, schema_version, payload, headers, occurred_at, next_attempt_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`,
					r.ID, r.AggregateType, r.AggregateID, r.AggregateSeq, r.EventType, r.SchemaVersion, r.Payload, headers)
				return err
			},
		}
	})
}

// openInZone opens a pool the way a service outside UTC might: its
// session time zone set to zone, and for a named zone the driver's
// location too (the driver cannot name a bare offset).
func openInZone(t testing.TB, dsn, zone string) *sql.DB {
	t.Helper()
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"time_zone": "'" + zone + "'"}
	cfg.Loc = time.UTC
	if loc, err := time.LoadLocation(zone); err == nil {
		cfg.Loc = loc
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var got string
	if err := db.QueryRow("SELECT @@SESSION.time_zone").Scan(&got); err != nil {
		t.Fatalf("open a pool in time zone %s: %v (named zones need the server's time zone tables: make up loads them)", zone, err)
	}
	if got != zone {
		t.Fatalf("session time zone %q, want %q", got, zone)
	}
	return db
}

func exec(t testing.TB, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
