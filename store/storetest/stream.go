package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store"
)

// streamRelay is a relay that can stream: its turn competes for the
// stream lease.
func (h Harness) streamRelay(t testing.TB, relayID string, lease time.Duration) (*testRelay, store.Rebalance) {
	t.Helper()
	r := &testRelay{h: h, id: relayID, lease: lease, known: store.NewKnown()}
	return r, r.streamTurn(t)
}

func (r *testRelay) streamTurn(t testing.TB) store.Rebalance {
	t.Helper()
	rb, err := r.h.Store.Rebalance(ctx, store.RebalanceRequest{RelayID: r.id, Lease: r.lease, Stream: true})
	if err != nil {
		t.Fatalf("turn of %s: %v", r.id, err)
	}
	r.own = rb.Ownership
	return rb
}

// streamed returns events as a change stream reads them: as committed,
// never claimed (Attempts 0), with the bucket the dialect computes.
func (h Harness) streamed(t testing.TB, ids ...string) []store.Event {
	t.Helper()
	out := make([]store.Event, len(ids))
	for i, id := range ids {
		d := h.show(t, id)
		out[i] = store.Event{ID: d.ID, AggregateType: d.AggregateType, AggregateID: d.AggregateID,
			AggregateSeq: d.AggregateSeq, EventType: d.EventType, SchemaVersion: uint16(d.SchemaVersion),
			Payload: d.Payload, Headers: d.Headers, OccurredAt: d.OccurredAt,
			Bucket: h.Store.Dialect().BucketOf(d.AggregateType, d.AggregateID)}
	}
	return out
}

// testOneStreamer: of two relays that can stream, one leads and owns every
// bucket; the other owns none, nor does a polling relay; the leader's
// checkpoint is fenced by its lease, and when it stops renewing the other
// takes over at a later epoch and the old leader can checkpoint no more.
func testOneStreamer(t *testing.T, h Harness) {
	a, rbA := h.streamRelay(t, "stream-a", 2*time.Second)
	if !rbA.Leading || !a.own.All() || rbA.Stream.Leader != "stream-a" {
		t.Fatalf("the first streaming relay: leading %v, %d buckets, leader %q; want it leading with every bucket",
			rbA.Leading, len(a.own.Buckets), rbA.Stream.Leader)
	}
	b, rbB := h.streamRelay(t, "stream-b", 2*time.Second)
	poll := h.join(t, "poll-c", 2*time.Second)
	if rbB.Leading || len(b.own.Buckets) != 0 || len(poll.own.Buckets) != 0 {
		t.Fatalf("beside a live leader: stream-b leading %v with %d buckets, poll-c %d; want no bucket for either",
			rbB.Leading, len(b.own.Buckets), len(poll.own.Buckets))
	}
	if err := h.Store.SaveCheckpoint(ctx, "stream-a", store.Checkpoint{Epoch: rbA.Stream.Epoch, Position: "pos-1"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.SaveCheckpoint(ctx, "stream-b", store.Checkpoint{Epoch: rbA.Stream.Epoch, Position: "pos-x"}); !errors.Is(err, store.ErrStreamLost) {
		t.Fatalf("a follower's checkpoint: %v, want ErrStreamLost", err)
	}
	var rb store.Rebalance
	testenv.Eventually(t, 15*time.Second, "stream-b takes the lease over once stream-a's ended", func() bool {
		rb = b.streamTurn(t)
		poll.rebalance(t)
		return rb.Leading && b.own.All()
	})
	if rb.Stream.Epoch <= rbA.Stream.Epoch || rb.Stream.Position != "pos-1" {
		t.Errorf("after the takeover: epoch %d (was %d), position %q; want a later epoch and stream-a's checkpoint",
			rb.Stream.Epoch, rbA.Stream.Epoch, rb.Stream.Position)
	}
	if err := h.Store.SaveCheckpoint(ctx, "stream-a", store.Checkpoint{Epoch: rbA.Stream.Epoch, Position: "pos-2"}); !errors.Is(err, store.ErrStreamLost) {
		t.Errorf("the deposed leader's checkpoint: %v, want ErrStreamLost", err)
	}
	// Leaving frees the lease at once: the polling relays share the buckets.
	if err := h.Store.Leave(ctx, "stream-b"); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.Leave(ctx, "stream-a"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 15*time.Second, "poll-c owns every bucket once nobody streams", func() bool {
		poll.rebalance(t)
		return poll.own.All()
	})
}

// testStreamPlansAndHandsOver: a streamed batch publishes fresh events
// whose predecessors are done, leaves alone events already published or
// in the polling path's hands, holds (hands over) an event behind a
// predecessor that is not done, and its settlement moves the checkpoint in
// the same transaction, or nothing when the lease is gone.
func testStreamPlansAndHandsOver(t *testing.T, h Harness) {
	// a: a#1 published already; a#2, a#3 fresh. b: b#1 failed (the polling
	// path's), b#2 fresh. c: c#1 fresh.
	first := h.add(t, orderEvents("a", "b")...)
	r, rb := h.streamRelay(t, "streamer", time.Minute)
	c := r.claim(t, 100)
	r.settle(t, c, store.Outcome{Published: []string{first[0]},
		Failed: []store.Failure{{EventID: first[1], Class: "timeout", Message: "timeout", RetryAfter: time.Hour}}})
	fresh := h.add(t, orderEvents("a", "a", "b", "c")...)
	batch := h.streamed(t, fresh...)
	batch = append(batch, h.streamed(t, first[0])...) // read again after a failover: already published

	plan, err := h.Store.PlanStream(ctx, r.own, batch, store.OrderHold, r.known)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range plan.Events {
		got = append(got, fmt.Sprintf("%s#%d", e.AggregateID, e.AggregateSeq))
		if e.Attempts != 1 {
			t.Errorf("%s is on attempt %d, want 1", e.ID, e.Attempts)
		}
	}
	if strings.Join(got, ",") != "a#2,a#3,c#1" || plan.Held != 1 {
		t.Fatalf("stream plan: %v, held %d; want a#2,a#3,c#1 and b#2 held behind b#1", got, plan.Held)
	}
	if d := h.show(t, fresh[2]); d.State != store.StateHeld || !strings.Contains(d.LastError, first[1]) {
		t.Errorf("b#2: state %s, last_error %q; want held (handed over) behind b#1", d.State, d.LastError)
	}
	// The polling path, while streaming, claims only what was handed over.
	handed, err := h.Store.Claim(ctx, store.ClaimRequest{Ownership: r.own, Limit: 100, Policy: store.OrderHold, HandedOver: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(handed.Events) != 0 {
		t.Errorf("handed-over claim took %v; b#1 backs off and b#2 waits behind it, the rest is the stream's", ids(handed.Events))
	}

	res := r.settle(t, plan, store.Outcome{Published: ids(plan.Events),
		Checkpoint: &store.Checkpoint{Epoch: rb.Stream.Epoch, Position: "after-batch-1"}})
	if res.Published != 3 {
		t.Fatalf("settle: %+v", res)
	}
	if l, _, err := h.Store.Stream(ctx); err != nil || l.Position != "after-batch-1" {
		t.Fatalf("checkpoint %q (%v), want after-batch-1", l.Position, err)
	}
	// Settled again with a stale epoch: nothing is written.
	again := h.add(t, orderEvents("d")...)
	plan2, err := h.Store.PlanStream(ctx, r.own, h.streamed(t, again...), store.OrderHold, r.known)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Store.Settle(ctx, plan2, store.Outcome{Published: ids(plan2.Events),
		Checkpoint: &store.Checkpoint{Epoch: rb.Stream.Epoch + 1, Position: "stale"}}, store.OrderHold)
	if !errors.Is(err, store.ErrStreamLost) {
		t.Fatalf("settle with a lost lease: %v, want ErrStreamLost", err)
	}
	if d := h.show(t, again[0]); d.State != store.StatePending {
		t.Errorf("the fenced settlement marked %s: %s", again[0], d.State)
	}
	if l, _, _ := h.Store.Stream(ctx); l.Position != "after-batch-1" {
		t.Errorf("checkpoint moved to %q by a fenced settlement", l.Position)
	}
}
