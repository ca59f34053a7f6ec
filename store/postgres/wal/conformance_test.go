package wal_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/changestream/streamtest"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConformance runs the change-stream readers' conformance suite on
// PostgreSQL's WAL, each test with a database and a slot of its own.
func TestConformance(t *testing.T) {
	streamtest.Run(t, func(t testing.TB, rc changestream.Config) streamtest.Harness {
		d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
		cfg := wal.Config{URL: d.DSN, Config: rc}
		slot := wal.SlotName(d.Name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, _, err := wal.Drop(ctx, d.DB, cfg, true); err != nil {
				t.Errorf("drop the slot: %v", err)
			}
		})
		src, err := wal.NewSource(ctx, d.DB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.Exec(t, "CREATE TABLE neighbour (id bigserial PRIMARY KEY, note text NOT NULL)")
		d.Exec(t, "CREATE TABLE aside (id bigserial PRIMARY KEY)")
		triggerDropped := false
		return streamtest.Harness{
			DB: d.DB, Dialect: d.Dialect, Source: src,
			WriteNeighbour: func(t testing.TB) { d.Exec(t, "INSERT INTO neighbour (note) VALUES ('busy')") },
			Lose: func(t testing.TB, position string) string {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if slot, _, err := wal.Drop(ctx, d.DB, cfg, false); err != nil || !slot {
					t.Fatalf("drop the slot: %v (dropped: %v)", err, slot)
				}
				return position
			},
			Disconnect: func(t testing.TB) int {
				ended := d.Strings(t, `SELECT pid::text FROM (SELECT active_pid AS pid, pg_terminate_backend(active_pid) AS ended
					FROM pg_replication_slots WHERE slot_name = ? AND active_pid IS NOT NULL) s WHERE ended`, slot)
				return len(ended)
			},
			AlterOutbox: func(t testing.TB, i int) {
				// PostgreSQL adds a column only at the table's end.
				if i == 0 {
					d.Exec(t, "ALTER TABLE outbox_events ADD COLUMN extra integer NULL")
				} else {
					d.Exec(t, "ALTER TABLE outbox_events ADD COLUMN tail varchar(10) NOT NULL DEFAULT 'x'")
				}
			},
			WriteNonTransactional: func(t testing.TB, tx *sql.Tx) {
				if _, err := tx.Exec("INSERT INTO aside DEFAULT VALUES"); err != nil {
					t.Fatal(err)
				}
			},
			InsertUnchecked: func(t testing.TB, r streamtest.Row) bool {
				if !triggerDropped {
					d.Exec(t, "DROP TRIGGER outbox_events_before_insert ON outbox_events")
					triggerDropped = true
				}
				var headers any
				if r.Headers != "" {
					headers = r.Headers
				}
				_, err := d.DB.Exec(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
					schema_version, payload, headers, occurred_at, next_attempt_at)
					VALUES ($1, 'order', $2, 1, 'order.created', $3, '{}', $4, clock_timestamp(), clock_timestamp())`,
					r.ID, r.AggregateID, r.SchemaVersion, headers)
				var pgErr interface{ SQLState() string }
				switch {
				case err == nil:
					return true
				case errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.SQLState(), "22") || strings.HasPrefix(pgErr.SQLState(), "23")):
					// Data exceptions (a uuid column, jsonb's refusal of \u0000)
					// and constraint violations (schema_version's CHECK).
					return false
				}
				t.Fatalf("insert %+v: %v", r, err)
				return false
			},
			Quote: func(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` },
		}
	})
}
