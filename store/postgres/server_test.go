package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestServerCapabilities checks, over TCP as the application role, what
// the dialect relies on from the server, and the PostgreSQL behaviours its
// statements are written around.
func TestServerCapabilities(t *testing.T) {
	d := testenv.NewPostgresDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var version, user, timeZone string
	var versionNum int
	if err := d.DB.QueryRowContext(ctx, "SELECT version(), current_setting('server_version_num')::int, current_user, current_setting('TimeZone')").
		Scan(&version, &versionNum, &user, &timeZone); err != nil {
		t.Fatal(err)
	}
	t.Logf("server %s as %s", version, user)
	if versionNum < 140000 {
		t.Errorf("server_version_num %d: want PostgreSQL 14 or later (statistics on expressions, DROP DATABASE ... WITH (FORCE))", versionNum)
	}
	if timeZone != "UTC" {
		t.Errorf("session TimeZone %q: postgres.Open sets UTC", timeZone)
	}

	// statement_timestamp() and Go agree on the instant.
	var now time.Time
	if err := d.DB.QueryRowContext(ctx, "SELECT statement_timestamp()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if skew := time.Since(now); skew > time.Minute || skew < -time.Minute {
		t.Errorf("statement_timestamp() = %v is %v away from Go's clock", now, skew)
	}
	if now.Location() != time.UTC {
		t.Errorf("a timestamptz scans in %v, want UTC", now.Location())
	}

	// In one transaction now() stays at its start; statement_timestamp()
	// moves with each statement, which is why the dialect reads it.
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var start1, stmt1, start2, stmt2 time.Time
	if err := tx.QueryRowContext(ctx, "SELECT now(), statement_timestamp()").Scan(&start1, &stmt1); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_sleep(0.05)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT now(), statement_timestamp()").Scan(&start2, &stmt2); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if !start2.Equal(start1) || !stmt2.After(stmt1) {
		t.Errorf("now() %v -> %v, statement_timestamp() %v -> %v: want now() fixed and statement_timestamp() moving",
			start1, start2, stmt1, stmt2)
	}

	if _, err := d.DB.ExecContext(ctx, "CREATE TABLE t (id int PRIMARY KEY, owner text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB.ExecContext(ctx, "INSERT INTO t VALUES (1, 'a'), (2, 'a')"); err != nil {
		t.Fatal(err)
	}

	// A settle's FOR SHARE blocks an acquire's UPDATE of a non-key column
	// (lock_timeout turns the wait into an error); FOR KEY SHARE would not.
	for _, tc := range []struct {
		lock    string
		blocked bool
	}{{"FOR SHARE", true}, {"FOR KEY SHARE", false}} {
		locker, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := locker.ExecContext(ctx, "SELECT id FROM t WHERE id = 1 "+tc.lock); err != nil {
			t.Fatal(err)
		}
		writer, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.ExecContext(ctx, "SET LOCAL lock_timeout = '100ms'"); err != nil {
			t.Fatal(err)
		}
		_, err = writer.ExecContext(ctx, "UPDATE t SET owner = 'b' WHERE id = 1")
		var pgErr *pgconn.PgError
		if blocked := errors.As(err, &pgErr) && pgErr.Code == "55P03"; blocked != tc.blocked || !blocked && err != nil {
			t.Errorf("UPDATE of a row locked %s: %v, want blocked %v", tc.lock, err, tc.blocked)
		}
		writer.Rollback()
		locker.Rollback()
	}

	// A FOR SHARE read that waited for an UPDATE re-checks its WHERE on the
	// row's newest version (READ COMMITTED): a settle that waited for a
	// takeover no longer finds its bucket.
	takeover, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback()
	if _, err := takeover.ExecContext(ctx, "UPDATE t SET owner = 'b' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	settle, err := d.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer settle.Close()
	var settlePID int
	if err := settle.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&settlePID); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ids []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := settle.QueryContext(ctx, "SELECT id FROM t WHERE owner = 'a' ORDER BY id FOR SHARE")
		if err != nil {
			done <- result{err: err}
			return
		}
		defer rows.Close()
		var r result
		for rows.Next() {
			var id int
			r.err = rows.Scan(&id)
			r.ids = append(r.ids, id)
		}
		if r.err == nil {
			r.err = rows.Err()
		}
		done <- r
	}()
	testenv.WaitFor(t, 10*time.Second, "the FOR SHARE read waits for the UPDATE", func() (bool, string) {
		var waiting bool
		err := d.DB.QueryRowContext(ctx, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", settlePID).Scan(&waiting)
		return err == nil && waiting, fmt.Sprintf("waiting %v (%v)", waiting, err)
	})
	if err := takeover.Commit(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || fmt.Sprint(r.ids) != "[2]" {
		t.Errorf("FOR SHARE read after the UPDATE committed: %v (%v), want [2]: the updated row no longer matches", r.ids, r.err)
	}

	// A duplicate key aborts the whole PostgreSQL transaction (25P02 for
	// every later statement), unlike MySQL's: the inbox's insert must never
	// raise one.
	tx, err = d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, dupErr := tx.ExecContext(ctx, "INSERT INTO t VALUES (2)")
	_, nextErr := tx.ExecContext(ctx, "SELECT 1")
	var pgErr *pgconn.PgError
	if !errors.As(dupErr, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("duplicate insert: %v, want unique_violation", dupErr)
	}
	if !errors.As(nextErr, &pgErr) || pgErr.Code != "25P02" {
		t.Errorf("after a duplicate key: %v, want in_failed_sql_transaction", nextErr)
	}
}

// TestPayloadIsKeptAsWritten: payload is json, not jsonb: the relay reads
// back the writer's bytes (key order, spacing, duplicate keys, number
// spelling), so the envelope's data is what the service wrote, on
// PostgreSQL as on MariaDB.
func TestPayloadIsKeptAsWritten(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	payload := `{"zeta":1,  "alpha":{"b":2,"a":1},"n":1.50,"big":123456789012345678901234567890,"dup":1,"dup":2,"s":"\u00e9"}`
	ids := d.AddEvents(t, outbox.Event{AggregateType: "order", AggregateID: "1", EventType: "order.created",
		SchemaVersion: 1, Payload: []byte(payload), Headers: map[string]string{"b": "2", "a": "1"}})
	st := postgres.NewStore(d.DB)
	c := testenv.Claim(t, st, "r", time.Minute, 10)
	if len(c.Events) != 1 || string(c.Events[0].Payload) != payload {
		t.Fatalf("claimed payload %q, want the writer's %q", c.Events[0].Payload, payload)
	}
	if h := c.Events[0].Headers; len(h) != 2 || h["a"] != "1" || h["b"] != "2" {
		t.Errorf("headers %v", h)
	}
	if e, err := st.ShowEvent(context.Background(), ids[0]); err != nil || string(e.Payload) != payload {
		t.Errorf("shown payload %q (%v), want the writer's", e.Payload, err)
	}
}

// TestNeverIsInfinity: a quarantined event and the events held behind it
// wait at next_attempt_at = 'infinity', which the store reads as Forever.
func TestNeverIsInfinity(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	ids := d.AddEvents(t, testenv.OrderEvents("p", "p")...)
	st := postgres.NewStore(d.DB)
	ctx := context.Background()
	c := testenv.Claim(t, st, "r", time.Minute, 10)
	if len(c.Events) != 2 {
		t.Fatalf("claimed %d events, want 2", len(c.Events))
	}
	if _, err := st.Settle(ctx, c, store.Outcome{
		Failed: []store.Failure{{EventID: ids[0], Class: "too_large", Message: "too large", Quarantine: true}},
		Unsent: []store.Unsent{{EventID: ids[1], Behind: ids[0]}},
	}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	if n := d.Count(t, "SELECT count(*) FROM outbox_events WHERE next_attempt_at = 'infinity'"); n != 2 {
		t.Errorf("%d rows at 'infinity', want the quarantined event and the one held behind it", n)
	}
	for _, id := range ids {
		if e, err := st.ShowEvent(ctx, id); err != nil || e.NextAttemptAt != nil {
			t.Errorf("event %s: next attempt %v (%v), want none (never)", id, e.NextAttemptAt, err)
		}
	}
	if _, err := st.ShowEvent(ctx, "not-a-uuid"); !errors.Is(err, store.ErrEventNotFound) {
		t.Errorf("show of an id that is no UUID: %v, want ErrEventNotFound", err)
	}
}

// TestWriterRetriesSerializationFailure: a caller's REPEATABLE READ
// transaction that finds the aggregate's counter changed since its
// snapshot gets 40001, which the dialect calls transient, and its retry
// continues the sequence without a gap.
func TestWriterRetriesSerializationFailure(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	d.AddEvents(t, testenv.OrderEvents("rr")...)
	ctx := context.Background()
	w, err := outbox.NewWriter(outbox.Config{Dialect: postgres.Dialect{}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	d.AddEvents(t, testenv.OrderEvents("rr")...) // another writer commits #2
	_, err = w.Add(ctx, tx, testenv.OrderEvents("rr")...)
	if err == nil || !(postgres.Dialect{}).IsTransient(err) {
		t.Fatalf("writer in a stale REPEATABLE READ snapshot: %v, want a transient serialization failure", err)
	}
	tx.Rollback()
	id := d.AddEvents(t, testenv.OrderEvents("rr")...)[0]
	var seq int
	if err := d.DB.QueryRow("SELECT aggregate_seq FROM outbox_events WHERE id = $1", id).Scan(&seq); err != nil || seq != 3 {
		t.Errorf("the retried event has aggregate_seq %d (%v), want 3", seq, err)
	}
}
