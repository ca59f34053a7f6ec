package storetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
)

func orderEvent(id string) outbox.Event {
	return outbox.Event{
		AggregateType: "order", AggregateID: id, EventType: "order.created", SchemaVersion: 1,
		Payload: json.RawMessage(`{"order_id":"` + id + `","total_amount":"19.98"}`),
	}
}

func testWriterCommitsWithTheTransaction(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	w := h.writer(t)

	tx, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(ctx, tx, orderEvent("1")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if b := h.backlog(t); b.Ready != 0 {
		t.Fatalf("%d events ready after a rollback, want 0", b.Ready)
	}

	occurred := time.Date(2026, 9, 26, 2, 12, 30, 123456000, time.UTC)
	e := orderEvent("1")
	e.OccurredAt = occurred
	e.Headers = map[string]string{"tenant": "acme"}
	id := h.add(t, e)[0]
	if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
		t.Fatalf("id %q: want a UUIDv7 (err %v)", id, err)
	}
	d := h.show(t, id)
	// Seq 1: the rolled-back transaction's counter was rolled back with it.
	if d.AggregateType != "order" || d.AggregateID != "1" || d.AggregateSeq != 1 || d.EventType != "order.created" || d.SchemaVersion != 1 {
		t.Errorf("stored %s/%s #%d %s v%d", d.AggregateType, d.AggregateID, d.AggregateSeq, d.EventType, d.SchemaVersion)
	}
	var payload, want any
	json.Unmarshal(d.Payload, &payload)
	json.Unmarshal(e.Payload, &want)
	if fmt.Sprint(payload) != fmt.Sprint(want) {
		t.Errorf("payload %s, want %s", d.Payload, e.Payload)
	}
	if len(d.Headers) != 1 || d.Headers["tenant"] != "acme" {
		t.Errorf("headers %v", d.Headers)
	}
	if !d.OccurredAt.Equal(occurred) {
		t.Errorf("occurred_at %v, want %v", d.OccurredAt, occurred)
	}
	if d.State != store.StatePending || d.PublishedAt != nil || d.Attempts != 0 {
		t.Errorf("a new event: state %s, published %v, attempts %d", d.State, d.PublishedAt, d.Attempts)
	}
	c := r.claim(t, 10)
	if len(c.Events) != 1 || c.Events[0].Headers["tenant"] != "acme" || !c.Events[0].OccurredAt.Equal(occurred) {
		t.Errorf("claimed %+v, want the event with its headers and occurred_at", c.Events)
	}
}

func testWriterNumbers(t *testing.T, h Harness) {
	a1 := h.add(t, orderEvent("7"), orderEvent("8"), orderEvent("7"))
	a2 := h.add(t, orderEvent("7"))
	want := map[string]uint64{a1[0]: 1, a1[1]: 1, a1[2]: 2, a2[0]: 3}
	for id, seq := range want {
		if got := h.show(t, id).AggregateSeq; got != seq {
			t.Errorf("event %s: aggregate_seq %d, want %d", id, got, seq)
		}
	}
}

// testConcurrentWriters: writers of one aggregate take turns, so
// aggregate_seq is gapless and follows commit order even when some writers
// roll back (invariant W1). A database may answer a writer with a deadlock
// when the first writer of a new counter rolls back while others wait for
// it; like any transaction, the writer then retries.
func testConcurrentWriters(t *testing.T, h Harness) {
	w := h.writer(t)
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
				tx, err := h.Store.DB().BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				ids, err := w.Add(ctx, tx, orderEvent("42"))
				if err != nil && h.Store.Dialect().IsTransient(err) {
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
	if len(commitOrder) == 0 || len(commitOrder) == writers*perWriter {
		t.Fatalf("%d committed events: the test should mix commits and rollbacks", len(commitOrder))
	}
	for i, id := range commitOrder {
		if seq := h.show(t, id).AggregateSeq; seq != uint64(i+1) {
			t.Fatalf("the %d. committed event has aggregate_seq %d: not gapless in commit order", i+1, seq)
		}
	}
}

func testWriterChunks(t *testing.T, h Harness) {
	events := make([]outbox.Event, 1200)
	for i := range events {
		events[i] = orderEvent(fmt.Sprint(i % 10))
	}
	added := h.add(t, events...)
	if b := h.backlog(t); b.Ready != 1200 {
		t.Errorf("%d events ready, want 1200", b.Ready)
	}
	if seq := h.show(t, added[len(added)-1]).AggregateSeq; seq != 120 {
		t.Errorf("the last event of aggregate 9 has seq %d, want 120", seq)
	}
}

// testWriterIgnoresTheSessionTimeZone: events written on a caller's pool
// whose session time zone is not UTC are claimable at once, and keep the
// instant they occurred at.
func testWriterTimeZone(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	for _, zone := range []string{"+08:00", "-05:00", "America/New_York", "Asia/Kolkata"} {
		t.Run(zone, func(t *testing.T) {
			db := h.OpenInZone(t, zone)
			occurred := time.Date(2026, 1, 15, 23, 30, 0, 0, time.UTC)
			e := orderEvent("tz")
			e.OccurredAt = occurred
			id := h.addOn(t, db, e)[0]
			c := r.claim(t, 10)
			if len(c.Events) != 1 || c.Events[0].ID != id {
				d := h.show(t, id)
				t.Fatalf("written in zone %s: claimed %v; the event waits until %v (now %v)", zone, ids(c.Events), d.NextAttemptAt, h.now(t))
			}
			if !c.Events[0].OccurredAt.Equal(occurred) {
				t.Errorf("occurred_at %v, want %v", c.Events[0].OccurredAt, occurred)
			}
			r.settle(t, c, store.Outcome{Published: []string{id}})
		})
	}
}

// testInboxDuplicates: a second insert of the same event id for the same
// consumer is a duplicate, the transaction stays usable, and another
// consumer is independent.
func testInboxDuplicates(t *testing.T, h Harness) {
	d := h.Store.Dialect()
	id := "0190c0de-0000-7000-8000-000000000001"
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i, tt := range []struct {
		consumer string
		want     bool
	}{{"inventory", false}, {"inventory", true}, {"billing", false}, {"billing", true}} {
		dup, err := d.InsertConsumed(ctx, tx, tt.consumer, id)
		if err != nil || dup != tt.want {
			t.Fatalf("insert %d (%s): duplicate %v, %v; want %v", i, tt.consumer, dup, err, tt.want)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after duplicates: %v", err)
	}
	tx2, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	if dup, err := d.InsertConsumed(ctx, tx2, "inventory", id); err != nil || !dup {
		t.Errorf("after commit: duplicate %v, %v; want a duplicate", dup, err)
	}
}

// testDeadlockIsTransient: two transactions that lock two aggregate
// counters in opposite orders (each adds to one aggregate, then to the
// other, in two calls) deadlock; the database's answer to the victim is
// transient.
func testDeadlockIsTransient(t *testing.T, h Harness) {
	d := h.Store.Dialect()
	w := h.writer(t)
	h.add(t, orderEvent("d1"), orderEvent("d2")) // the counters exist
	tx1, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	tx2, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	if _, err := w.Add(ctx, tx1, orderEvent("d1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add(ctx, tx2, orderEvent("d2")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		tx  *sql.Tx
		err error
	}
	results := make(chan result, 2)
	go func() { _, err := w.Add(ctx, tx1, orderEvent("d2")); results <- result{tx1, err} }()
	go func() { _, err := w.Add(ctx, tx2, orderEvent("d1")); results <- result{tx2, err} }()
	var victim error
	for range 2 {
		r := <-results
		if r.err == nil {
			continue
		}
		if victim != nil {
			t.Fatalf("both transactions failed: %v; %v", victim, r.err)
		}
		victim = r.err
		r.tx.Rollback() // some databases keep the victim's locks until then
	}
	if victim == nil {
		t.Fatal("both transactions went through: no deadlock")
	}
	if !d.IsTransient(victim) {
		t.Errorf("deadlock %v is not transient", victim)
	}
	if d.IsTransient(fmt.Errorf("no such warehouse")) {
		t.Error("a plain error is transient")
	}
}
