package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func newWriter(t *testing.T, cfg outbox.Config) *outbox.Writer {
	t.Helper()
	w, err := outbox.NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func orderEvent(id string) outbox.Event {
	return outbox.Event{
		AggregateType: "order", AggregateID: id, EventType: "order.created", SchemaVersion: 1,
		Payload: json.RawMessage(`{"order_id":` + id + `,"total_amount":"19.98"}`),
	}
}

func countEvents(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM outbox_events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAddCommitsWithTheTransaction, on each database server.
func TestAddCommitsWithTheTransaction(t *testing.T) {
	testenv.OnEachServer(t, testAddCommitsWithTheTransaction)
}

func testAddCommitsWithTheTransaction(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	w := newWriter(t, outbox.Config{Dialect: d.Dialect})
	ctx := context.Background()

	t.Run("rolled back leaves nothing", func(t *testing.T) {
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(ctx, tx, orderEvent("1")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := countEvents(t, d.DB); n != 0 {
			t.Fatalf("%d events after rollback, want 0", n)
		}
		var seqRows int
		d.DB.QueryRow("SELECT COUNT(*) FROM outbox_aggregates").Scan(&seqRows)
		if seqRows != 0 {
			t.Errorf("%d aggregate counters after rollback, want 0", seqRows)
		}
	})

	t.Run("committed is stored as given", func(t *testing.T) {
		occurred := time.Date(2026, 9, 26, 2, 12, 30, 123456000, time.UTC)
		e := orderEvent("2")
		e.OccurredAt = occurred
		e.Headers = map[string]string{"tenant": "acme"}
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := w.Add(ctx, tx, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		id, err := uuid.Parse(ids[0])
		if err != nil || id.Version() != 7 {
			t.Fatalf("id %q: want a UUIDv7 (err %v)", ids[0], err)
		}
		var (
			aggType, aggID, evType, payload, headers string
			version                                  int
			seq                                      uint64
			gotOccurred                              time.Time
			published                                sql.NullTime
		)
		err = d.DB.QueryRow(d.SQL(`SELECT aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
			payload, headers, occurred_at, published_at FROM outbox_events WHERE id = ?`), ids[0]).
			Scan(&aggType, &aggID, &seq, &evType, &version, &payload, &headers, &gotOccurred, &published)
		if err != nil {
			t.Fatal(err)
		}
		if aggType != "order" || aggID != "2" || evType != "order.created" || version != 1 || seq != 1 {
			t.Errorf("stored %s/%s #%d %s v%d", aggType, aggID, seq, evType, version)
		}
		if payload != string(e.Payload) {
			t.Errorf("payload %s, want %s", payload, e.Payload)
		}
		// Headers are a JSON object (PostgreSQL's jsonb spaces it its way).
		var h map[string]string
		if err := json.Unmarshal([]byte(headers), &h); err != nil || len(h) != 1 || h["tenant"] != "acme" {
			t.Errorf("headers %s (%v)", headers, err)
		}
		if !gotOccurred.Equal(occurred) {
			t.Errorf("occurred_at %v, want %v", gotOccurred, occurred)
		}
		if published.Valid {
			t.Errorf("a new event is already published at %v", published.Time)
		}
	})
}

func TestAddNumbersEventsPerAggregate(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	a1 := testenv.AddEvents(t, d.DB, orderEvent("7"), orderEvent("8"), orderEvent("7"))
	a2 := testenv.AddEvents(t, d.DB, orderEvent("7"))
	want := map[string]uint64{a1[0]: 1, a1[1]: 1, a1[2]: 2, a2[0]: 3}
	for id, seq := range want {
		var got uint64
		if err := d.DB.QueryRow("SELECT aggregate_seq FROM outbox_events WHERE id = ?", id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != seq {
			t.Errorf("event %s: aggregate_seq %d, want %d", id, got, seq)
		}
	}
}

// TestConcurrentWritersOfOneAggregate: writers of one aggregate take turns, so
// aggregate_seq is gapless and follows commit order even when some writers
// roll back. InnoDB may answer a writer with a deadlock (1213) when the
// first writer of a new counter row rolls back while others wait for it;
// like any InnoDB transaction, the writer then retries.
func TestConcurrentWritersOfOneAggregate(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	w := newWriter(t, outbox.Config{Dialect: mysql.Dialect{}})
	ctx := context.Background()

	const writers, perWriter = 8, 25
	var (
		mu          sync.Mutex
		commitOrder []string
		wg          sync.WaitGroup
	)
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				tx, err := d.DB.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				ids, err := w.Add(ctx, tx, orderEvent("42"))
				if isDeadlock(err) {
					tx.Rollback()
					continue
				}
				if err != nil {
					tx.Rollback()
					errs <- err
					return
				}
				if (g+i)%5 == 0 {
					tx.Rollback()
					continue
				}
				// Holding the counter lock until commit is what makes the
				// commit order observable here.
				mu.Lock()
				err = tx.Commit()
				if err == nil {
					commitOrder = append(commitOrder, ids[0])
				}
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := d.DB.Query("SELECT id, aggregate_seq FROM outbox_events WHERE aggregate_id = '42' ORDER BY aggregate_seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bySeq []string
	for rows.Next() {
		var id string
		var seq uint64
		if err := rows.Scan(&id, &seq); err != nil {
			t.Fatal(err)
		}
		if seq != uint64(len(bySeq)+1) {
			t.Fatalf("aggregate_seq %d at position %d: not gapless", seq, len(bySeq)+1)
		}
		bySeq = append(bySeq, id)
	}
	if strings.Join(bySeq, ",") != strings.Join(commitOrder, ",") {
		t.Errorf("aggregate_seq order differs from commit order")
	}
	if len(bySeq) == 0 || len(bySeq) == writers*perWriter {
		t.Errorf("%d committed events: the test should mix commits and rollbacks", len(bySeq))
	}
}

func isDeadlock(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}

// TestAddRefusesInvalidEvents: the same validation and errors whatever the
// database, and nothing written.
func TestAddRefusesInvalidEvents(t *testing.T) {
	testenv.OnEachServer(t, testAddRefusesInvalidEvents)
}

func testAddRefusesInvalidEvents(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	w := newWriter(t, outbox.Config{Dialect: d.Dialect, MaxPayloadBytes: 64})
	ctx := context.Background()

	valid := orderEvent("1")
	with := func(f func(*outbox.Event)) outbox.Event {
		e := valid
		f(&e)
		return e
	}
	tests := []struct {
		name  string
		event outbox.Event
		field string
		want  error
	}{
		{"empty aggregate type", with(func(e *outbox.Event) { e.AggregateType = "" }), "AggregateType", outbox.ErrRequired},
		{"blank aggregate id", with(func(e *outbox.Event) { e.AggregateID = "  " }), "AggregateID", outbox.ErrRequired},
		{"empty event type", with(func(e *outbox.Event) { e.EventType = "" }), "EventType", outbox.ErrRequired},
		{"aggregate type of 65", with(func(e *outbox.Event) { e.AggregateType = strings.Repeat("a", 65) }), "AggregateType", outbox.ErrTooLong},
		{"aggregate id of 129", with(func(e *outbox.Event) { e.AggregateID = strings.Repeat("é", 129) }), "AggregateID", outbox.ErrTooLong},
		{"event type of 129", with(func(e *outbox.Event) { e.EventType = strings.Repeat("e", 129) }), "EventType", outbox.ErrTooLong},
		{"invalid utf-8", with(func(e *outbox.Event) { e.AggregateID = "\xff" }), "AggregateID", outbox.ErrNotUTF8},
		{"schema version 0", with(func(e *outbox.Event) { e.SchemaVersion = 0 }), "SchemaVersion", outbox.ErrSchemaVersion},
		{"no payload", with(func(e *outbox.Event) { e.Payload = nil }), "Payload", outbox.ErrRequired},
		{"payload not json", with(func(e *outbox.Event) { e.Payload = []byte(`{"a":`) }), "Payload", outbox.ErrPayloadNotJSON},
		{"payload too large", with(func(e *outbox.Event) { e.Payload = []byte(`"` + strings.Repeat("x", 64) + `"`) }), "Payload", outbox.ErrPayloadTooLarge},
		{"too many headers", with(func(e *outbox.Event) {
			e.Headers = map[string]string{}
			for i := range outbox.HeaderMaxCount + 1 {
				e.Headers[fmt.Sprint("h", i)] = "v"
			}
		}), "Headers", outbox.ErrTooManyHeaders},
		{"header value too long", with(func(e *outbox.Event) {
			e.Headers = map[string]string{"h": strings.Repeat("v", outbox.HeaderValueMaxLen+1)}
		}), "Headers[h]", outbox.ErrTooLong},
		// PostgreSQL cannot store a NUL in text or jsonb, and said so with
		// raw database errors (issue 21, defect 7): refused alike on both.
		{"NUL in aggregate id", with(func(e *outbox.Event) { e.AggregateID = "a\x00b" }), "AggregateID", outbox.ErrNUL},
		{"NUL in aggregate type", with(func(e *outbox.Event) { e.AggregateType = "order\x00" }), "AggregateType", outbox.ErrNUL},
		{"NUL in event type", with(func(e *outbox.Event) { e.EventType = "\x00order.created" }), "EventType", outbox.ErrNUL},
		{"NUL in header value", with(func(e *outbox.Event) { e.Headers = map[string]string{"h": "v\x00"} }), "Headers[h]", outbox.ErrNUL},
		{"NUL in header name", with(func(e *outbox.Event) { e.Headers = map[string]string{"h\x00": "v"} }), "Headers[h\x00] name", outbox.ErrNUL},
		{"payload not utf-8", with(func(e *outbox.Event) { e.Payload = []byte("{\"a\":\"\x80\"}") }), "Payload", outbox.ErrNotUTF8},
		// herald sets these itself (issue 21, defect 3).
		{"reserved header", with(func(e *outbox.Event) { e.Headers = map[string]string{envelope.HeaderEventID: "not-a-uuid"} }),
			"Headers[" + envelope.HeaderEventID + "] name", outbox.ErrReservedHeader},
		{"reserved prefix in another case", with(func(e *outbox.Event) { e.Headers = map[string]string{"Herald-Tenant": "acme"} }),
			"Headers[Herald-Tenant] name", outbox.ErrReservedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := d.DB.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			// The invalid event comes second: nothing of the call is written.
			_, err = w.Add(ctx, tx, valid, tt.event)
			var ve *outbox.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want a ValidationError wrapping %v", err, tt.want)
			}
			if ve.Field != tt.field || ve.Index != 1 {
				t.Errorf("error names event %d field %q, want event 1 field %q", ve.Index, ve.Field, tt.field)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if n := countEvents(t, d.DB); n != 0 {
				t.Errorf("%d events written by a refused call", n)
			}
		})
	}
	if _, err := w.Add(ctx, nil); !errors.Is(err, outbox.ErrNoEvents) {
		t.Errorf("Add with no events: %v, want ErrNoEvents", err)
	}
	if _, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}, MaxPayloadBytes: -1}); err == nil {
		t.Error("NewWriter accepted a negative MaxPayloadBytes")
	}
}

func TestTraceparentFromContext(t *testing.T) {
	testenv.OnEachServer(t, testTraceparentFromContext)
}

func testTraceparentFromContext(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	w := newWriter(t, outbox.Config{Dialect: d.Dialect})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := outbox.ContextWithTraceparent(context.Background(), tp)
	if got, _ := outbox.TraceparentFromContext(outbox.ContextWithTraceparent(context.Background(), "00-bogus")); got != "" {
		t.Errorf("an invalid traceparent was kept: %q", got)
	}

	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := w.Add(ctx, tx, orderEvent("1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var headers string
	if err := d.DB.QueryRow(d.SQL("SELECT headers FROM outbox_events WHERE id = ?"), ids[0]).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(headers), &h); err != nil {
		t.Fatal(err)
	}
	if h[outbox.TraceparentHeader] != tp {
		t.Errorf("headers %s lack traceparent %s", headers, tp)
	}
}

func TestLargeBatchIsChunked(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	w := newWriter(t, outbox.Config{Dialect: mysql.Dialect{}})
	ctx := context.Background()
	events := make([]outbox.Event, 1200)
	for i := range events {
		events[i] = orderEvent(fmt.Sprint(i % 10))
	}
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := w.Add(ctx, tx, events...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countEvents(t, d.DB); n != 1200 {
		t.Errorf("%d events, want 1200", n)
	}
	var maxSeq uint64
	d.DB.QueryRow("SELECT MAX(aggregate_seq) FROM outbox_events WHERE aggregate_id = '3'").Scan(&maxSeq)
	if maxSeq != 120 {
		t.Errorf("aggregate 3 ends at seq %d, want 120", maxSeq)
	}
}
