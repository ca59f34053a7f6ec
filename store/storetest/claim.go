package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/wait"
	"github.com/herald-outbox/herald/store"
)

// testClaimWritesNothing: a claim returns the oldest ready events in full,
// as chains per aggregate, and leaves their rows as they were.
func testClaimWritesNothing(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("1", "2", "1", "3")...)
	r := h.join(t, "relay-a", time.Minute)
	if !r.own.All() {
		t.Fatalf("a relay alone owns %d buckets, want all %d", len(r.own.Buckets), store.BucketCount)
	}
	if exp := r.own.Expires.Sub(h.now(t)); exp < 50*time.Second || exp > time.Minute {
		t.Errorf("its buckets expire in %v, want about a minute (database clock)", exp)
	}
	c := r.claim(t, 100)
	var got []string
	for _, e := range c.Events {
		got = append(got, fmt.Sprintf("%s#%d", e.AggregateID, e.AggregateSeq))
	}
	if strings.Join(got, ",") != "1#1,1#2,2#1,3#1" {
		t.Fatalf("claimed %v, want the chain 1#1,1#2 then 2#1, 3#1", got)
	}
	for _, e := range c.Events {
		if want := h.Store.Dialect().BucketOf(e.AggregateType, e.AggregateID); e.Bucket != want {
			t.Errorf("event %s of %s/%s claimed with bucket %d, but BucketOf says %d", e.ID, e.AggregateType, e.AggregateID, e.Bucket, want)
		}
	}
	e := c.Events[0]
	if e.ID != added[0] || e.Attempts != 1 || e.AggregateType != "order" || e.EventType != "order.created" ||
		e.SchemaVersion != 1 || string(e.Payload) != `{"n":0}` || e.Bucket < 0 || e.Bucket >= store.BucketCount {
		t.Errorf("claimed event %+v: want order/1 #1 order.created v1 {\"n\":0} on attempt 1 with its bucket", e)
	}
	for _, id := range added {
		if d := h.show(t, id); d.State != store.StatePending || d.Attempts != 0 || d.ErrorClass != "" {
			t.Errorf("claimed event %s was written: state %s, attempts %d, class %q", id, d.State, d.Attempts, d.ErrorClass)
		}
	}
	if res := r.settle(t, c, store.Outcome{Published: ids(c.Events)}); res.Published != 4 || res.LostLeases != 0 {
		t.Fatalf("settle: %+v", res)
	}
	if again := r.claim(t, 100); len(again.Events) != 0 {
		t.Errorf("claimed %v again after they were published", ids(again.Events))
	}
}

// testRelaysOwnDisjointBuckets: relays that join share the buckets, a
// bucket changes hands only when its owner gives it up, and each relay
// claims only its own buckets' events.
func testRelaysOwnDisjointBuckets(t *testing.T, h Harness) {
	aggs := make([]string, 200)
	for i := range aggs {
		aggs[i] = fmt.Sprint("agg-", i)
	}
	added := h.add(t, orderEvents(aggs...)...)
	a := h.join(t, "relay-a", time.Minute)
	b := h.join(t, "relay-b", time.Minute)
	if len(b.own.Buckets) != 0 {
		t.Fatalf("relay-b took %d buckets relay-a still owns", len(b.own.Buckets))
	}
	if rb := a.rebalance(t); rb.Members != 2 || rb.Released != store.BucketCount/2 || len(a.own.Buckets) != store.BucketCount/2 {
		t.Fatalf("relay-a's turn after relay-b joined: %+v, owns %d; want half released", rb, len(a.own.Buckets))
	}
	if rb := b.rebalance(t); rb.Acquired != store.BucketCount/2 || rb.TakenOver != 0 {
		t.Fatalf("relay-b's turn: %+v; want the released half acquired, none taken over", rb)
	}
	for bucket := range a.own.Buckets {
		if _, both := b.own.Buckets[bucket]; both {
			t.Fatalf("bucket %d owned by both relays", bucket)
		}
	}
	ca, cb := a.claim(t, 500), b.claim(t, 500)
	seen := map[string]string{}
	for relay, c := range map[string]store.Claim{"relay-a": ca, "relay-b": cb} {
		own := a.own
		if relay == "relay-b" {
			own = b.own
		}
		for _, e := range c.Events {
			if prev, dup := seen[e.ID]; dup {
				t.Fatalf("event %s claimed by %s and %s", e.ID, prev, relay)
			}
			seen[e.ID] = relay
			if _, ok := own.Buckets[e.Bucket]; !ok {
				t.Errorf("%s claimed event %s of bucket %d, which it does not own", relay, e.ID, e.Bucket)
			}
		}
	}
	if len(seen) != len(added) || len(ca.Events) == 0 || len(cb.Events) == 0 {
		t.Errorf("claimed %d of %d events (relay-a %d, relay-b %d): want every event once, by both relays",
			len(seen), len(added), len(ca.Events), len(cb.Events))
	}
}

// testMembershipChanges: a third relay joins, one leaves, one dies; after
// each change the live relays end up owning every bucket between them,
// each bucket once, and a dead relay's buckets are taken over only after
// its lease.
func testMembershipChanges(t *testing.T, h Harness) {
	relays := map[string]*testRelay{}
	for _, id := range []string{"relay-a", "relay-b", "relay-c"} {
		relays[id] = h.join(t, id, 2*time.Second)
	}
	settle := func(what string, live ...string) {
		t.Helper()
		wait.For(t, 15*time.Second, what, func() (bool, string) {
			owners := map[int]string{}
			var state []string
			for _, id := range live {
				r := relays[id]
				r.rebalance(t)
				state = append(state, fmt.Sprintf("%s owns %d", id, len(r.own.Buckets)))
				for b := range r.own.Buckets {
					if prev, dup := owners[b]; dup {
						t.Fatalf("%s: bucket %d owned by %s and %s", what, b, prev, id)
					}
					owners[b] = id
				}
			}
			balanced := true
			for _, id := range live {
				n := len(relays[id].own.Buckets)
				balanced = balanced && n >= store.BucketCount/len(live) && n <= store.BucketCount/len(live)+1
			}
			return len(owners) == store.BucketCount && balanced, strings.Join(state, ", ")
		})
	}
	settle("three relays share the buckets", "relay-a", "relay-b", "relay-c")

	if err := h.Store.Leave(ctx, "relay-b"); err != nil {
		t.Fatal(err)
	}
	settle("relay-b left: relay-a and relay-c share its buckets", "relay-a", "relay-c")

	// relay-c dies: it stops taking turns. Until its lease ends, relay-a
	// cannot have its buckets.
	dead := relays["relay-c"].own
	rb := relays["relay-a"].rebalance(t)
	for b := range dead.Buckets {
		if _, ok := rb.Ownership.Buckets[b]; ok && h.now(t).Before(dead.Expires) {
			t.Fatalf("relay-a took bucket %d while relay-c's lease runs until %v", b, dead.Expires)
		}
	}
	takenOver := 0
	wait.For(t, 15*time.Second, "relay-a takes relay-c's buckets over after its lease", func() (bool, string) {
		rb := relays["relay-a"].rebalance(t)
		takenOver += rb.TakenOver
		return relays["relay-a"].own.All(), fmt.Sprintf("relay-a owns %d", len(relays["relay-a"].own.Buckets))
	})
	if takenOver != len(dead.Buckets) {
		t.Errorf("%d buckets reported taken over, want relay-c's %d", takenOver, len(dead.Buckets))
	}
	for b, epoch := range relays["relay-a"].own.Buckets {
		if old, ok := dead.Buckets[b]; ok && epoch <= old {
			t.Errorf("bucket %d taken over at epoch %d, not after relay-c's %d", b, epoch, old)
		}
	}
}

// testTakeoverIsFenced: a relay that lost its buckets (it stopped renewing
// past its lease) cannot settle or hold anything claimed under them; the
// new owner claims the events again.
func testTakeoverIsFenced(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("1", "2", "3")...)
	a := h.join(t, "relay-a", time.Second)
	stale := a.claim(t, 100)
	if len(stale.Events) != 3 {
		t.Fatalf("relay-a claimed %d, want 3", len(stale.Events))
	}
	b := h.join(t, "relay-b", time.Minute)
	wait.Until(t, 15*time.Second, "relay-b owns every bucket once relay-a's lease ended", func() bool {
		b.rebalance(t)
		return b.own.All()
	})
	fresh := b.claim(t, 100)
	if len(fresh.Events) != 3 {
		t.Fatalf("relay-b claimed %d, want the 3 events again", len(fresh.Events))
	}
	// relay-a, late, settles its batch: every update is fenced off.
	res, err := h.Store.Settle(ctx, stale, store.Outcome{
		Published: []string{added[0]},
		Failed:    []store.Failure{{EventID: added[1], Class: "timeout", Message: "late", Quarantine: true}},
		Unsent:    []store.Unsent{{EventID: added[2], Behind: added[1]}},
	}, store.OrderHold)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published != 0 || res.Quarantined != 0 || res.LostLeases != 3 {
		t.Fatalf("stale settle: %+v; want nothing changed and 3 lost", res)
	}
	for _, id := range added {
		if d := h.show(t, id); d.State != store.StatePending || len(d.Failures) != 0 {
			t.Errorf("event %s after the stale settle: %s, %d failures; want untouched", id, d.State, len(d.Failures))
		}
	}
	if res := b.settle(t, fresh, store.Outcome{Published: ids(fresh.Events)}); res.Published != 3 {
		t.Fatalf("owner's settle: %+v", res)
	}
}

// testReadyPredecessorOutsideTheWindow: an aggregate's second event backs
// off while its successors wait behind it; they become ready together, and
// the successors sort first (earlier occurred_at). A window full of them
// must bring the predecessor in as the chain's head, not pass over its
// successors for ever.
func testReadyPredecessorOutsideTheWindow(t *testing.T, h Harness) {
	base := h.now(t).Add(-time.Hour)
	events := orderEvents("a", "a", "a", "a", "a", "a")
	for i := range events {
		events[i].OccurredAt = base.Add(time.Duration(i) * time.Second)
	}
	events[1].OccurredAt = base.Add(time.Hour) // a#2 sorts last among equals
	added := h.add(t, events...)
	r := h.join(t, "relay-a", time.Minute)

	first := r.claim(t, 1)
	r.settle(t, first, store.Outcome{Published: ids(first.Events)})
	c := r.claim(t, 100)
	if len(c.Events) != 5 || c.Events[0].ID != added[1] {
		t.Fatalf("claimed %v, want a#2..a#6", ids(c.Events))
	}
	out := store.Outcome{Failed: []store.Failure{{EventID: added[1], Class: "timeout", Message: "timeout", RetryAfter: time.Second}}}
	for _, id := range added[2:] {
		out.Unsent = append(out.Unsent, store.Unsent{EventID: id, Behind: added[1]})
	}
	r.settle(t, c, out)

	var d store.Claim
	wait.Until(t, 10*time.Second, "the chain claimed again after the backoff", func() bool {
		d = r.claim(t, 2) // a window of 2 rows: a#3, a#4
		return len(d.Events) > 0
	})
	if got := strings.Join(ids(d.Events), ","); got != added[1]+","+added[2] {
		t.Fatalf("claimed %v, want a#2 (brought in) then a#3", ids(d.Events))
	}
	if d.Events[0].Attempts != 2 {
		t.Errorf("a#2 is on attempt %d, want 2", d.Events[0].Attempts)
	}
}

// testHotAggregateDoesNotFillTheBatch: an aggregate with hundreds of
// ready events ahead of the others gets a bounded share of a claim, and the
// claim looks past it for the others.
func testHotAggregateDoesNotFillTheBatch(t *testing.T, h Harness) {
	hot := make([]string, 300)
	for i := range hot {
		hot[i] = "hot"
	}
	h.add(t, orderEvents(hot...)...)
	quiet := h.add(t, orderEvents("q1", "q2", "q3")...)
	r := h.join(t, "relay-a", time.Minute)
	c := r.claim(t, 160)
	var hotSeqs []uint64
	var others []string
	for _, e := range c.Events {
		if e.AggregateID == "hot" {
			hotSeqs = append(hotSeqs, e.AggregateSeq)
		} else {
			others = append(others, e.ID)
		}
	}
	if len(hotSeqs) != 160/8 || !slices.IsSorted(hotSeqs) || hotSeqs[0] != 1 {
		t.Errorf("the hot aggregate got %d events (%v), want its first 160/8 = 20 in order", len(hotSeqs), hotSeqs)
	}
	slices.Sort(others)
	slices.Sort(quiet)
	if fmt.Sprint(others) != fmt.Sprint(quiet) {
		t.Errorf("the quiet aggregates got %v, want all of %v", others, quiet)
	}
}

// testConcurrentRelaysDrainInOrder: four relays take turns at the bucket
// table and drain 2,000 events of 40 aggregates, settling each batch as
// published. No event is claimed twice, and inside every aggregate events
// are settled in sequence order.
func testConcurrentRelaysDrainInOrder(t *testing.T, h Harness) {
	aggs := make([]string, 2000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 40)
	}
	added := h.add(t, orderEvents(aggs...)...)

	var (
		mu        sync.Mutex
		claimedBy = map[string]string{}
		published []store.Event
	)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.join(t, fmt.Sprintf("relay-%d", i), 10*time.Second)
			deadline := time.Now().Add(2 * time.Minute)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for turn := 0; ; turn++ {
				mu.Lock()
				done := len(published) == len(added)
				mu.Unlock()
				if done {
					return
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s: not drained in 2 minutes", r.id)
					return
				}
				if turn%5 == 0 {
					rb, err := h.Store.Rebalance(ctx, store.RebalanceRequest{RelayID: r.id, Lease: r.lease})
					if err != nil {
						errs <- err
						return
					}
					r.own = rb.Ownership
				}
				c, err := h.Store.Claim(ctx, store.ClaimRequest{Ownership: r.own, Limit: 50, Policy: store.OrderHold, Known: r.known})
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
					if prev, dup := claimedBy[e.ID]; dup {
						errs <- fmt.Errorf("event %s claimed by %s and %s", e.ID, prev, r.id)
					}
					claimedBy[e.ID] = r.id
				}
				// Settled under the lock so the recorded order is the
				// publication order.
				res, err := h.Store.Settle(ctx, c, store.Outcome{Published: ids(c.Events)}, store.OrderHold)
				if err == nil && res.Published != len(c.Events) {
					err = fmt.Errorf("%s: settle marked %d of %d", r.id, res.Published, len(c.Events))
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
	relaysSeen := map[string]bool{}
	for _, e := range published {
		if e.AggregateSeq != last[e.AggregateID]+1 {
			t.Fatalf("aggregate %s: #%d published after #%d", e.AggregateID, e.AggregateSeq, last[e.AggregateID])
		}
		last[e.AggregateID] = e.AggregateSeq
		relaysSeen[claimedBy[e.ID]] = true
	}
	if len(relaysSeen) < 2 {
		t.Errorf("only %v claimed: the relays should have shared the buckets", relaysSeen)
	}
}

// testClaimsContinueAfterTheirCursor: a claim that read a full window and
// took all of it says where the next may continue; continuing from there
// returns the following events, never the previous ones, which may still
// be unpublished (their batch still settling); a short read says start
// over.
func testClaimsContinueAfterTheirCursor(t *testing.T, h Harness) {
	aggs := make([]string, 30)
	for i := range aggs {
		aggs[i] = fmt.Sprint("c-", i)
	}
	added := h.add(t, orderEvents(aggs...)...)
	r := h.join(t, "relay-a", time.Minute)
	first := r.claim(t, 20)
	if len(first.Events) != 20 || first.Next == nil {
		t.Fatalf("first claim: %d events, next %v; want 20 and a cursor", len(first.Events), first.Next)
	}
	c, err := h.Store.Claim(ctx, store.ClaimRequest{Ownership: r.own, Limit: 20, Policy: store.OrderHold, After: first.Next})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range first.Events {
		seen[e.ID] = true
	}
	for _, e := range c.Events {
		if seen[e.ID] {
			t.Fatalf("the continued claim returned %s again", e.ID)
		}
		seen[e.ID] = true
	}
	if len(c.Events) != 10 || c.Next != nil {
		t.Errorf("continued claim: %d events, next %v; want the other 10 and no cursor (a short read)", len(c.Events), c.Next)
	}
	if len(seen) != len(added) {
		t.Errorf("the two claims took %d of %d events", len(seen), len(added))
	}
	// Nothing settled: starting over returns the first events again.
	if again := r.claim(t, 20); len(again.Events) != 20 || again.Events[0].ID != first.Events[0].ID {
		t.Errorf("starting over claimed %v, want the first batch again", ids(again.Events))
	}
}
