package migrations_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver a foreign writer's pool uses

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// The SQL contract (migration 00006, docs/writers.md): a writer that is
// not herald's, in plain SQL of the specification's columns, on its own
// pool with its own session time zone.

// specColumns are the specification's columns, as its writers insert them.
var specColumns = []string{"id", "aggregate_type", "aggregate_id", "event_type", "schema_version", "payload", "occurred_at", "next_attempt_at"}

// openForeignWriter opens a pool the way another language's service would:
// no herald setting, its session time zone set to zone, its parameters
// interpolated into the statement text by the client (MySQL's
// interpolateParams, pgx's simple protocol), as PDO, PyMySQL and psycopg2
// do, so a bad value reaches the server and the server refuses it.
func openForeignWriter(t *testing.T, d *testenv.Database, zone string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if d.Server == testenv.PostgreSQL {
		setting := zone
		if strings.HasPrefix(zone, "+") || strings.HasPrefix(zone, "-") {
			// PostgreSQL reads a bare "+05:30" with POSIX's sign (west of
			// Greenwich): "<+05:30>-05:30" is five and a half hours east.
			setting = "<" + zone + ">" + map[byte]string{'+': "-", '-': "+"}[zone[0]] + zone[1:]
		}
		u, perr := url.Parse(d.DSN)
		if perr != nil {
			t.Fatal(perr)
		}
		q := u.Query()
		q.Set("timezone", setting)
		q.Set("default_query_exec_mode", "simple_protocol")
		u.RawQuery = q.Encode()
		db, err = sql.Open("pgx", u.String())
	} else {
		cfg, perr := driver.ParseDSN(d.DSN)
		if perr != nil {
			t.Fatal(perr)
		}
		cfg.Params = map[string]string{"time_zone": "'" + zone + "'"}
		cfg.InterpolateParams = true
		db, err = sql.Open("mysql", cfg.FormatDSN())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// insertStatement is INSERT INTO outbox_events (columns) VALUES (...) in
// d's placeholders.
func insertStatement(d *testenv.Database, columns []string) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ")
	return d.SQL("INSERT INTO outbox_events (" + strings.Join(columns, ", ") + ") VALUES (" + marks + ")")
}

// wallClock is t as an application in zone writes it: local wall time,
// no offset (PHP's now(), Python's datetime.now()).
func wallClock(t time.Time, zone *time.Location) string {
	return t.In(zone).Format("2006-01-02 15:04:05.000000")
}

// TestPlainInsertIsAnEvent: the specification's INSERT, from a service
// whose application clock is at +08:00 and whose session is at +05:30 or a
// named zone, is numbered in its aggregate (two transactions: 1 and 2),
// ready at once on the database's UTC clock (its next_attempt_at, eight
// hours ahead, is overwritten), claimable, and keeps the occurred_at the
// writer sent.
func TestPlainInsertIsAnEvent(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		app := time.FixedZone("app", 8*3600)
		for _, zone := range []string{"+05:30", "Asia/Kolkata"} {
			t.Run(zone, func(t *testing.T) {
				w := openForeignWriter(t, d, zone)
				aggregate := "plain-" + strings.ReplaceAll(zone, "/", "-")
				before, err := d.Dialect.Now(ctx, d.DB)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				var sent []string
				for i := range 2 {
					id := uuid.NewString()
					at := wallClock(time.Now(), app)
					tx, err := w.BeginTx(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tx.ExecContext(ctx, insertStatement(d, specColumns), id, "order", aggregate,
						"order.created", 1, fmt.Sprintf(`{"n":%d}`, i), at, at); err != nil {
						tx.Rollback()
						t.Fatalf("insert: %v", err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
					ids, sent = append(ids, id), append(sent, at)
				}
				after, err := d.Dialect.Now(ctx, d.DB)
				if err != nil {
					t.Fatal(err)
				}
				st := d.Store()
				for i, id := range ids {
					e, err := st.ShowEvent(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if e.AggregateSeq != uint64(i+1) {
						t.Errorf("event %d: aggregate_seq %d, want %d", i, e.AggregateSeq, i+1)
					}
					if e.NextAttemptAt == nil || e.NextAttemptAt.Before(before) || e.NextAttemptAt.After(after) {
						t.Errorf("event %d: next_attempt_at %v, want the database's clock between %v and %v (the writer sent %s at +08:00)",
							i, e.NextAttemptAt, before, after, sent[i])
					}
					// What the writer sent, read as the database reads a
					// zone-less literal: MySQL keeps the wall time (herald
					// reads it as UTC), PostgreSQL takes it in the session's
					// zone.
					wantAt, err := time.ParseInLocation("2006-01-02 15:04:05.000000", sent[i], sessionLocation(t, server, zone))
					if err != nil {
						t.Fatal(err)
					}
					if !e.OccurredAt.Equal(wantAt) {
						t.Errorf("event %d: occurred_at %v, want %v (as written)", i, e.OccurredAt, wantAt)
					}
				}
				c := testenv.Claim(t, st, "relay-a", time.Minute, 10) // one relay: it owns every bucket
				claimed := map[string]bool{}
				for _, e := range c.Events {
					claimed[e.ID] = true
				}
				for _, id := range ids {
					if !claimed[id] {
						t.Errorf("event %s is not claimable at once: claimed %d events", id, len(c.Events))
					}
				}
			})
		}
	})
}

// sessionLocation is where server reads a zone-less time literal of a
// session in zone: MySQL stores the wall time, which herald reads as UTC.
func sessionLocation(t *testing.T, server testenv.Server, zone string) *time.Location {
	t.Helper()
	if server == testenv.MariaDB {
		return time.UTC
	}
	if loc, err := time.LoadLocation(zone); err == nil {
		return loc
	}
	offset, err := time.Parse("-07:00", zone)
	if err != nil {
		t.Fatal(err)
	}
	_, secs := offset.Zone()
	return time.FixedZone(zone, secs)
}

// TestNextAttemptAtIsTheInsertMoment: next_attempt_at is the time the row
// was inserted, not the time its statement (or transaction) started: a
// statement that spends 200 ms before it produces its row gets a
// next_attempt_at at least 200 ms after the statement's own start time,
// which it writes into occurred_at.
func TestNextAttemptAtIsTheInsertMoment(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		id := uuid.NewString()
		// The payload's expression waits on the server before the row exists.
		q := `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, occurred_at)
			VALUES (?, 'order', 'slow', 'order.created', 1, CONCAT('{"slept":', SLEEP(0.2), '}'), UTC_TIMESTAMP(6))`
		if server == testenv.PostgreSQL {
			q = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, occurred_at)
				VALUES ($1, 'order', 'slow', 'order.created', 1, (SELECT '{"slept":0}'::json FROM pg_sleep(0.2)), statement_timestamp())`
		}
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, q, id); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		e, err := d.Store().ShowEvent(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if e.NextAttemptAt == nil || e.NextAttemptAt.Sub(e.OccurredAt) < 200*time.Millisecond {
			t.Errorf("next_attempt_at %v, statement start %v: want at least 200 ms after it (the row's own moment)", e.NextAttemptAt, e.OccurredAt)
		}
	})
}

// TestOccurredAtIsOptional: a row without occurred_at (left out or NULL)
// gets the database's UTC clock at insert, as next_attempt_at.
func TestOccurredAtIsOptional(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w := openForeignWriter(t, d, "+05:30")
		before, err := d.Dialect.Now(ctx, d.DB)
		if err != nil {
			t.Fatal(err)
		}
		omitted, null := uuid.NewString(), uuid.NewString()
		if _, err := w.ExecContext(ctx, insertStatement(d, []string{"id", "aggregate_type", "aggregate_id", "event_type", "schema_version", "payload"}),
			omitted, "order", "no-time", "order.created", 1, "{}"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ExecContext(ctx, insertStatement(d, []string{"id", "aggregate_type", "aggregate_id", "event_type", "schema_version", "payload", "occurred_at"}),
			null, "order", "no-time", "order.created", 1, "{}", nil); err != nil {
			t.Fatal(err)
		}
		after, err := d.Dialect.Now(ctx, d.DB)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{omitted, null} {
			e, err := d.Store().ShowEvent(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if e.OccurredAt.Before(before) || e.OccurredAt.After(after) || e.NextAttemptAt == nil || !e.OccurredAt.Equal(*e.NextAttemptAt) {
				t.Errorf("occurred_at %v (next_attempt_at %v), want the database's clock between %v and %v", e.OccurredAt, e.NextAttemptAt, before, after)
			}
		}
	})
}

// TestSuppliedSequenceIsKept: a writer that gives aggregate_seq (as herald's
// Go writer did before the trigger) keeps it, and the counter is left
// alone.
func TestSuppliedSequenceIsKept(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		id := uuid.NewString()
		d.Exec(t, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, occurred_at)
			VALUES (?, 'order', 'given', 7, 'order.created', 1, '{}', ?)`, id, time.Now().UTC())
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE id = ? AND aggregate_seq = 7", id); n != 1 {
			t.Errorf("the supplied aggregate_seq 7 was not kept")
		}
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox_aggregates WHERE aggregate_id = 'given'"); n != 0 {
			t.Errorf("a supplied aggregate_seq touched the counter")
		}
	})
}

// TestTriggerKeepsTheWritersLastInsertID: on MySQL, the trigger's
// LAST_INSERT_ID(expr) does not leak into the writer's session, whose
// LAST_INSERT_ID() is still its business row's after the outbox insert.
func TestTriggerKeepsTheWritersLastInsertID(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.Exec(t, "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(10))")
	d.Exec(t, "INSERT INTO orders (note) VALUES ('a'), ('b'), ('c')")
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (note) VALUES ('d')")
	if err != nil {
		t.Fatal(err)
	}
	orderID, _ := res.LastInsertId()
	for range 2 { // the second one takes the update branch of the upsert
		res, err = tx.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, occurred_at)
			VALUES (?, 'order', ?, 'order.created', 1, '{}', UTC_TIMESTAMP(6))`, uuid.NewString(), fmt.Sprint(orderID))
		if err != nil {
			t.Fatal(err)
		}
	}
	if id, _ := res.LastInsertId(); id != 0 {
		t.Errorf("the outbox insert reports insert id %d, want 0 (it has no AUTO_INCREMENT)", id)
	}
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if last != orderID {
		t.Errorf("LAST_INSERT_ID() after the outbox inserts is %d, want the order's %d", last, orderID)
	}
}

// badRow is one refused insert: the columns' values over a valid row, and
// the words each database's error must contain.
type badRow struct {
	name string
	// set replaces values of the valid row (nil: SQL NULL); omit leaves
	// columns out.
	set  map[string]any
	omit []string
	// mysql and postgres are substrings of the error on each server.
	mysql, postgres string
}

// TestBadRowsAreRefused: every row herald could not publish as written is
// refused by the database with an error naming the column, and changes
// nothing: no row, no counter, and no lock, since the writer's
// transaction, still open, does not keep another writer of the same
// aggregate waiting.
func TestBadRowsAreRefused(t *testing.T) {
	manyJSON := "{"
	for i := range 33 {
		if i > 0 {
			manyJSON += ","
		}
		manyJSON += fmt.Sprintf(`"h%02d":"v"`, i)
	}
	manyJSON += "}"
	bigPayload := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []badRow{
		{name: "missing id", omit: []string{"id"}, mysql: "id must be a UUID", postgres: "id is required"},
		{name: "null id", set: map[string]any{"id": nil}, mysql: "id must be a UUID", postgres: "id is required"},
		{name: "id not a uuid", set: map[string]any{"id": "order-1-created"}, mysql: "id must be a UUID (8-4-4-4-12 hex digits), got 'order-1-created'", postgres: "invalid input syntax for type uuid"},
		{name: "empty aggregate id", set: map[string]any{"aggregate_id": ""}, mysql: "aggregate_id is required", postgres: "aggregate_id is required"},
		{name: "blank aggregate id", set: map[string]any{"aggregate_id": "   "}, mysql: "aggregate_id is required", postgres: "aggregate_id is required"},
		{name: "null aggregate id", set: map[string]any{"aggregate_id": nil}, mysql: "aggregate_id is required", postgres: "aggregate_id is required"},
		{name: "empty aggregate type", set: map[string]any{"aggregate_type": ""}, mysql: "aggregate_type is required", postgres: "aggregate_type is required"},
		{name: "empty event type", set: map[string]any{"event_type": ""}, mysql: "event_type is required", postgres: "event_type is required"},
		{name: "schema version 0", set: map[string]any{"schema_version": 0}, mysql: "schema_version must be 1 or more", postgres: "outbox_events_schema_version_check"},
		{name: "payload not JSON", set: map[string]any{"payload": `{"order_id": 9182,`}, mysql: "payload is not valid JSON", postgres: "invalid input syntax for type json"},
		{name: "null payload", set: map[string]any{"payload": nil}, mysql: "payload is required", postgres: "payload is required"},
		{name: "payload over 1 MiB", set: map[string]any{"payload": bigPayload}, mysql: "more than the limit of 1048576", postgres: "more than the limit of 1048576"},
		{name: "headers an array", set: map[string]any{"headers": `["tenant","acme"]`}, mysql: "headers must be NULL or a JSON object of strings", postgres: "headers must be NULL or a JSON object of strings, not array"},
		{name: "headers not JSON", set: map[string]any{"headers": `tenant=acme`}, mysql: "headers must be NULL or a JSON object of strings", postgres: "invalid input syntax for type json"},
		{name: "header a number", set: map[string]any{"headers": `{"tenant":"acme","retries":3}`}, mysql: "header 'retries' must be a string, not integer", postgres: "header 'retries' must be a string, not number"},
		{name: "header an object", set: map[string]any{"headers": `{"trace":{"id":"x"}}`}, mysql: "header 'trace' must be a string, not object", postgres: "header 'trace' must be a string, not object"},
		{name: "header without a name", set: map[string]any{"headers": `{"":"x"}`}, mysql: "header name '' must have 1 to 128 characters", postgres: "header name '' must have 1 to 128 characters"},
		{name: "header name too long", set: map[string]any{"headers": `{"` + strings.Repeat("n", 129) + `":"x"}`}, mysql: "must have 1 to 128 characters", postgres: "must have 1 to 128 characters"},
		{name: "header value too long", set: map[string]any{"headers": `{"note":"` + strings.Repeat("v", 1025) + `"}`}, mysql: "header 'note' is longer than 1024 characters", postgres: "header 'note' is longer than 1024 characters"},
		{name: "too many headers", set: map[string]any{"headers": manyJSON}, mysql: "headers has 33 entries", postgres: "headers has 33 entries"},
		{name: "NUL in the aggregate id", set: map[string]any{"aggregate_id": "a\x00b"}, mysql: "aggregate_id must not contain a NUL character", postgres: "invalid message format"},
		{name: "NUL in a header value", set: map[string]any{"headers": `{"tenant":"a\u0000"}`}, mysql: "header 'tenant' contains a NUL character", postgres: "unsupported Unicode escape sequence"},
		{name: "header in herald's prefix", set: map[string]any{"headers": `{"Herald-Event-Id":"x"}`}, mysql: "header name 'Herald-Event-Id' is in herald's reserved prefix herald-", postgres: "header name 'Herald-Event-Id' is in herald's reserved prefix herald-"},
		{name: "aggregate id too long", set: map[string]any{"aggregate_id": strings.Repeat("a", 129)}, mysql: "Data too long for column 'aggregate_id'", postgres: "value too long for type character varying(128)"},
		{name: "aggregate type too long", set: map[string]any{"aggregate_type": strings.Repeat("t", 65)}, mysql: "Data too long for column 'aggregate_type'", postgres: "value too long for type character varying(64)"},
		{name: "event type too long", set: map[string]any{"event_type": strings.Repeat("e", 129)}, mysql: "Data too long for column 'event_type'", postgres: "value too long for type character varying(128)"},
	}
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		w := openForeignWriter(t, d, "+05:30")
		other := openForeignWriter(t, d, "+00:00")
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				aggregate := fmt.Sprintf("bad-%d", i)
				values := map[string]any{
					"id": uuid.NewString(), "aggregate_type": "order", "aggregate_id": aggregate, "event_type": "order.created",
					"schema_version": 1, "payload": `{"order_id":9182}`, "headers": nil,
					"occurred_at": time.Now().UTC().Format("2006-01-02 15:04:05.000000"), "next_attempt_at": time.Now().UTC().Format("2006-01-02 15:04:05.000000"),
				}
				for k, v := range tc.set {
					values[k] = v
				}
				var columns []string
				var args []any
				for _, c := range append(specColumns, "headers") {
					if !slices.Contains(tc.omit, c) {
						columns = append(columns, c)
						args = append(args, values[c])
					}
				}
				tx, err := w.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				_, err = tx.ExecContext(ctx, insertStatement(d, columns), args...)
				want := map[testenv.Server]string{testenv.MariaDB: tc.mysql, testenv.PostgreSQL: tc.postgres}[server]
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want an error containing %q", err, want)
				}
				t.Logf("refused: %v", err)
				// The refusing transaction is still open: another writer of
				// the same aggregate goes through at once and is its first
				// event.
				id := uuid.NewString()
				if _, err := other.ExecContext(ctx, insertStatement(d, specColumns), id, "order", aggregate, "order.created", 1, "{}",
					values["occurred_at"], values["next_attempt_at"]); err != nil {
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						t.Fatalf("the refused row's transaction keeps the aggregate's counter locked: %v", err)
					}
					t.Fatal(err)
				}
				tx.Rollback()
				if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = ?", aggregate); n != 1 {
					t.Errorf("%d rows of aggregate %s, want only the valid one", n, aggregate)
				}
				if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE id = ? AND aggregate_seq = 1", id); n != 1 {
					t.Errorf("the valid row after the refused one is not the aggregate's first event")
				}
			})
		}
	})
}

// TestGoWriterAndPlainSQLWriteTheSameRow: herald's Go writer and a plain
// INSERT of the same event leave the same row, column for column (but the
// id, the aggregate and the insert time), so neither relay source can tell
// them apart.
func TestGoWriterAndPlainSQLWriteTheSameRow(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, server)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		at := time.Date(2026, 9, 26, 2, 12, 30, 123456000, time.UTC)
		payload := `{"order_id":9182,"customer_id":42,"total_amount":"199.00"}`
		goID := d.AddEvents(t, outbox.Event{AggregateType: "order", AggregateID: "go", EventType: "order.created", SchemaVersion: 2,
			Payload: json.RawMessage(payload), Headers: map[string]string{"tenant": "acme"}, OccurredAt: at})[0]
		sqlID := uuid.NewString()
		w := openForeignWriter(t, d, "+05:30")
		if _, err := w.ExecContext(ctx, insertStatement(d, []string{"id", "aggregate_type", "aggregate_id", "event_type", "schema_version", "payload", "headers", "occurred_at"}),
			sqlID, "order", "sql", "order.created", 2, payload, `{"tenant":"acme"}`, map[testenv.Server]string{ // the same instant: MySQL's DATETIME holds UTC, PostgreSQL's literal says so
				testenv.MariaDB: "2026-09-26 02:12:30.123456", testenv.PostgreSQL: "2026-09-26 02:12:30.123456+00"}[server]); err != nil {
			t.Fatal(err)
		}
		rows, err := d.DB.QueryContext(ctx, d.SQL("SELECT * FROM outbox_events WHERE id IN (?, ?) ORDER BY aggregate_id"), goID, sqlID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		columns, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for rows.Next() {
			raw := make([]sql.RawBytes, len(columns))
			ptrs := make([]any, len(columns))
			for i := range raw {
				ptrs[i] = &raw[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make([]string, len(raw))
			for i, b := range raw {
				row[i] = fmt.Sprintf("%q", b)
				if b == nil {
					row[i] = "NULL"
				}
			}
			got = append(got, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("%d rows", len(got))
		}
		for i, c := range columns {
			switch c {
			case "id", "aggregate_id", "next_attempt_at":
				continue
			}
			if got[0][i] != got[1][i] {
				t.Errorf("column %s: Go writer %s, plain SQL %s", c, got[0][i], got[1][i])
			}
		}
	})
}
