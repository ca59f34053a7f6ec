package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store"
)

func testClaimLeasesAndHidesRows(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("1", "2", "3")...)

	a := h.claim(t, "relay-a", 100, time.Minute)
	if got := strings.Join(ids(a.Events), ","); got != strings.Join(added, ",") {
		t.Fatalf("relay-a claimed %v, want %v", ids(a.Events), added)
	}
	if b := h.claim(t, "relay-b", 100, time.Minute); len(b.Events) != 0 || b.Held != 0 {
		t.Fatalf("relay-b claimed %d (held %d) events under relay-a's live lease, want none", len(b.Events), b.Held)
	}
	now := h.now(t)
	if exp := a.Lease.Expires.Sub(now); exp < 50*time.Second || exp > time.Minute {
		t.Errorf("lease ends in %v, want about a minute (database clock)", exp)
	}
	for _, id := range added {
		d := h.show(t, id)
		if d.State != store.StateLeased || d.LockedBy != "relay-a" || d.Attempts != 1 {
			t.Errorf("event %s: state %s, locked_by %q, attempts %d; want leased by relay-a, 1 attempt", id, d.State, d.LockedBy, d.Attempts)
		}
		if d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(a.Lease.Expires) {
			t.Errorf("event %s: next attempt %v, want the lease's expiry %v", id, d.NextAttemptAt, a.Lease.Expires)
		}
	}
	e := a.Events[0]
	if e.Attempts != 1 || e.AggregateType != "order" || e.AggregateID != "1" || e.AggregateSeq != 1 ||
		e.EventType != "order.created" || e.SchemaVersion != 1 || string(e.Payload) != `{"n":0}` {
		t.Errorf("claimed event %+v: want order/1 #1 order.created v1 {\"n\":0} on attempt 1", e)
	}
}

func testClaimSkipsBehindLease(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("x", "x", "x", "y")...)

	a := h.claim(t, "relay-a", 1, time.Minute) // takes x#1 only
	if got := ids(a.Events); len(got) != 1 || got[0] != added[0] {
		t.Fatalf("relay-a claimed %v, want x#1 %s", got, added[0])
	}
	b := h.claim(t, "relay-b", 100, time.Minute)
	if got := ids(b.Events); len(got) != 1 || got[0] != added[3] {
		t.Fatalf("relay-b claimed %v, want only y#1 (x#2 and x#3 wait for x#1)", got)
	}
	// x#1 is in flight with relay-a: x#2 and x#3 are passed over, untouched.
	if b.Skipped != 2 || b.Held != 0 {
		t.Errorf("relay-b skipped %d and held %d events, want 2 skipped, 0 held", b.Skipped, b.Held)
	}
	for _, id := range added[1:3] {
		if d := h.show(t, id); d.State != store.StatePending || d.Attempts != 0 || d.ErrorClass != "" {
			t.Errorf("skipped event %s was changed: state %s, class %q, attempts %d", id, d.State, d.ErrorClass, d.Attempts)
		}
	}
	if res := h.settle(t, a, store.Outcome{Published: ids(a.Events)}); res.Published != 1 {
		t.Fatalf("settle: %+v", res)
	}
	// Once x#1 is published, x#2 and x#3 come at once, as one chain.
	c := h.claim(t, "relay-b", 100, time.Minute)
	if got := ids(c.Events); strings.Join(got, ",") != strings.Join(added[1:3], ",") {
		t.Fatalf("after x#1 was published relay-b claimed %v, want x#2, x#3 in order", got)
	}
}

func testExpiredLeaseIsTakenOverAndFenced(t *testing.T, h Harness) {
	h.add(t, orderEvents("1", "2")...)

	a := h.claim(t, "relay-a", 100, time.Second)
	var b store.Claim
	testenv.Eventually(t, 10*time.Second, "relay-b takes over the expired lease", func() bool {
		b = h.claim(t, "relay-b", 100, time.Minute)
		return len(b.Events) > 0
	})
	if b.Steals != 2 {
		t.Errorf("relay-b reports %d steals, want 2", b.Steals)
	}
	if b.Events[0].Attempts != 2 {
		t.Errorf("the taken-over event is on attempt %d, want 2", b.Events[0].Attempts)
	}
	// relay-a, late, tries to settle its (lost) rows: fenced off, whatever
	// the outcome says.
	stale, err := h.Store.Settle(ctx, a.Lease, store.Outcome{
		Published: ids(a.Events)[:1],
		Failed:    []store.Failure{{EventID: a.Events[1].ID, Class: "timeout", Message: "late", Quarantine: true}},
	}, store.OrderHold)
	if err != nil {
		t.Fatal(err)
	}
	if stale.Published != 0 || stale.Quarantined != 0 || stale.LostLeases != 2 {
		t.Fatalf("stale settle: %+v; want nothing changed and 2 lost leases", stale)
	}
	for _, e := range b.Events {
		if d := h.show(t, e.ID); d.State != store.StateLeased || d.LockedBy != "relay-b" || len(d.Failures) != 0 {
			t.Errorf("event %s after the stale settle: %s by %q, %d failures; want still leased by relay-b", e.ID, d.State, d.LockedBy, len(d.Failures))
		}
	}
	if res := h.settle(t, b, store.Outcome{Published: ids(b.Events)}); res.Published != 2 {
		t.Fatalf("owner's settle: %+v", res)
	}
}

// testExpiredLeaseBehindSuccessors: a relay dies holding an aggregate's
// second event. Its lease ends after the later events' next_attempt_at,
// so they fill every claim window ahead of it; the claim must still bring
// the orphaned event in (as a chain head), not pass over its successors
// for ever.
func testExpiredLeaseBehindSuccessors(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("a", "a", "a", "a", "a", "a", "a", "a")...)

	first := h.claim(t, "relay-a", 1, time.Minute)
	h.settle(t, first, store.Outcome{Published: ids(first.Events)})
	dead := h.claim(t, "relay-dead", 1, time.Second) // a#2, never settled
	if got := ids(dead.Events); len(got) != 1 || got[0] != added[1] {
		t.Fatalf("the doomed relay claimed %v, want a#2", got)
	}
	if live := h.claim(t, "relay-b", 2, time.Minute); len(live.Events) != 0 || live.Skipped == 0 {
		t.Fatalf("under a#2's live lease relay-b claimed %v (skipped %d), want nothing", ids(live.Events), live.Skipped)
	}
	var c store.Claim
	testenv.Eventually(t, 10*time.Second, "the expired lease's event claimed again", func() bool {
		c = h.claim(t, "relay-b", 2, time.Minute) // a window of 4 rows: a#3..a#6
		return len(c.Events) > 0
	})
	if got := strings.Join(ids(c.Events), ","); got != added[1]+","+added[2] || c.Steals != 1 {
		t.Fatalf("claimed %v (steals %d), want a#2 (taken over) then a#3", ids(c.Events), c.Steals)
	}
}

// testConcurrentClaims: four claimers drain 2,000 events of 40
// aggregates, settling each batch as published. No event is leased twice,
// and inside every aggregate events are settled in sequence order.
func testConcurrentClaims(t *testing.T, h Harness) {
	aggs := make([]string, 2000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 40)
	}
	added := h.add(t, orderEvents(aggs...)...)

	var (
		mu        sync.Mutex
		leasedBy  = map[string]string{}
		published []store.Event
	)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			relayID := fmt.Sprintf("relay-%d", r)
			deadline := time.Now().Add(2 * time.Minute)
			tick := time.NewTicker(20 * time.Millisecond) // the rest is leased or held: poll again
			defer tick.Stop()
			for {
				mu.Lock()
				done := len(published) == len(added)
				mu.Unlock()
				if done {
					return
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s: not drained in 2 minutes", relayID)
					return
				}
				c, err := h.Store.Claim(ctx, store.ClaimRequest{RelayID: relayID, Limit: 50, Lease: time.Minute, Policy: store.OrderHold})
				if err != nil {
					errs <- err
					return
				}
				if len(c.Events) == 0 {
					<-tick.C
					continue
				}
				mu.Lock()
				for _, e := range c.Events {
					if prev, dup := leasedBy[e.ID]; dup {
						errs <- fmt.Errorf("event %s leased by %s and %s", e.ID, prev, relayID)
					}
					leasedBy[e.ID] = relayID
				}
				// Settled under the lock so the recorded order is the
				// publication order.
				res, err := h.Store.Settle(ctx, c.Lease, store.Outcome{Published: ids(c.Events)}, store.OrderHold)
				if err == nil && res.Published != len(c.Events) {
					err = fmt.Errorf("settle marked %d of %d", res.Published, len(c.Events))
				}
				published = append(published, c.Events...)
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
		t.Error(err)
	}
	if len(published) != len(added) {
		t.Fatalf("published %d of %d events", len(published), len(added))
	}
	last := map[string]uint64{}
	for _, e := range published {
		if e.AggregateSeq != last[e.AggregateID]+1 {
			t.Fatalf("aggregate %s: #%d published after #%d", e.AggregateID, e.AggregateSeq, last[e.AggregateID])
		}
		last[e.AggregateID] = e.AggregateSeq
	}
}
