package postgres_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/store/storetest"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConformance runs the store's conformance suite on PostgreSQL.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB) storetest.Harness {
		d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
		return storetest.Harness{
			Store: postgres.NewStore(d.DB),
			// 'infinity' minus an interval is 'infinity': "never" stays.
			Backdate: func(t testing.TB, by time.Duration, ids ...string) {
				t.Helper()
				shift := fmt.Sprintf("interval '%d microseconds'", by.Microseconds())
				exec(t, d.DB, `UPDATE outbox_events SET occurred_at = occurred_at - `+shift+
					`, published_at = published_at - `+shift+`, quarantined_at = quarantined_at - `+shift+
					`, locked_at = locked_at - `+shift+`, next_attempt_at = next_attempt_at - `+shift+`
					WHERE id = ANY($1::uuid[])`, ids)
				exec(t, d.DB, `UPDATE outbox_failures SET failed_at = failed_at - `+shift+`
					WHERE event_id = ANY($1::uuid[])`, ids)
			},
			BackdateConsumed: func(t testing.TB, by time.Duration, consumer string, ids ...string) {
				t.Helper()
				exec(t, d.DB, fmt.Sprintf(`UPDATE consumed_events SET consumed_at = consumed_at - interval '%d microseconds'
					WHERE consumer_name = $1 AND event_id = ANY($2::uuid[])`, by.Microseconds()), consumer, ids)
			},
			OpenInZone: func(t testing.TB, zone string) *sql.DB {
				t.Helper()
				return openInZone(t, d.DSN, zone)
			},
			// Text parameters, so the server, not the driver, judges every
			// value (a uuid, a json, a NUL in text).
			DropTrigger: func(t testing.TB) {
				t.Helper()
				d.Exec(t, "DROP TRIGGER outbox_events_before_insert ON outbox_events")
			},
			InsertRaw: func(t testing.TB, r storetest.RawRow) error {
				t.Helper()
				var headers any
				if r.Headers != nil {
					headers = string(r.Headers)
				}
				_, err := d.DB.Exec(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
					event_type, schema_version, payload, headers, occurred_at, next_attempt_at)
					VALUES ($1::text::uuid, $2::text, $3::text, $4, $5::text, $6, $7::text::json, $8::text::jsonb,
					statement_timestamp(), statement_timestamp())`,
					r.ID, r.AggregateType, r.AggregateID, r.AggregateSeq, r.EventType, r.SchemaVersion, string(r.Payload), headers)
				return err
			},
		}
	})
}

// openInZone opens a pool the way a service outside UTC might: pgx's
// stdlib driver, its sessions' TimeZone set to zone (the pool does not go
// through postgres.Open, which would set UTC). A UTC offset becomes the
// POSIX zone "<+08>-08": PostgreSQL reads a bare "+08:00" with POSIX's
// sign, west of Greenwich.
func openInZone(t testing.TB, dsn, zone string) *sql.DB {
	t.Helper()
	setting := zone
	if strings.HasPrefix(zone, "+") || strings.HasPrefix(zone, "-") {
		west := map[byte]string{'+': "-", '-': "+"}[zone[0]]
		setting = "<" + zone[:3] + ">" + west + zone[1:]
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("pgx", dsn+sep+"timezone="+urlQueryEscape(setting))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var offset string
	if err := db.QueryRow("SELECT to_char(now(), 'TZH:TZM')").Scan(&offset); err != nil {
		t.Fatalf("open a pool in time zone %s: %v", zone, err)
	}
	if offset == "+00:00" {
		t.Fatalf("session in zone %s (TimeZone %q) is at UTC", zone, setting)
	}
	if strings.HasPrefix(zone, "+") || strings.HasPrefix(zone, "-") {
		if offset != zone {
			t.Fatalf("session offset %s, want %s", offset, zone)
		}
	}
	return db
}

func urlQueryEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "+", "%2B", "<", "%3C", ">", "%3E", "/", "%2F", ":", "%3A", " ", "%20", "&", "%26")
	return r.Replace(s)
}

func exec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
