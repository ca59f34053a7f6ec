package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/wait"
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
	wait.Until(t, 15*time.Second, "stream-b takes the lease over once stream-a's ended", func() bool {
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
	wait.Until(t, 15*time.Second, "poll-c owns every bucket once nobody streams", func() bool {
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

// sampleWatermark takes a watermark sample and waits until it may be used
// (every transaction it waits for ended).
func (h Harness) sampleWatermark(t testing.TB) store.WatermarkSample {
	t.Helper()
	s, err := h.Store.SampleWatermark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, 10*time.Second, "the sample's transactions ending", func() bool {
		ended, err := h.Store.WatermarkEnded(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		return ended
	})
	return s
}

// testStreamPublishesWithoutWriting: a streamed batch Kafka acknowledged
// is settled with its checkpoint and no write of its rows: they stay as
// their writer inserted them (docs/design.md, section 9.2). Once a
// watermark sampled after their commit is saved, every reader without the
// stream takes them as published (S2): the event's state, the unpublished
// count, a polling relay claiming while no stream leads (which also takes
// them as done predecessors), replay and cleanup; an event committed after
// the sample is "streaming", and that claim takes it.
func testStreamPublishesWithoutWriting(t *testing.T, h Harness) {
	early := h.add(t, orderEvents("a", "b")...)
	// Written a minute ago: a sample lies behind the oldest open
	// transaction, and a little more (MySQL: a second).
	h.Backdate(t, time.Minute, early...)
	r, rb := h.streamRelay(t, "streamer", time.Minute)
	plan, err := h.Store.PlanStream(ctx, r.own, h.streamed(t, early...), store.OrderHold, r.known)
	if err != nil || len(plan.Events) != 2 {
		t.Fatalf("stream plan: %v events (%v), want both", len(plan.Events), err)
	}
	res := r.settle(t, plan, store.Outcome{Published: ids(plan.Events),
		Checkpoint: &store.Checkpoint{Epoch: rb.Stream.Epoch, Position: "pos-1"}})
	if res.Published != 2 || res.LostLeases != 0 {
		t.Fatalf("settle: %+v, want 2 published", res)
	}
	for _, id := range early {
		if d := h.show(t, id); d.PublishedAt != nil || d.ErrorClass != "" || d.Attempts != 0 || d.State != store.StatePending {
			t.Errorf("streamed event %s was written: state %s, published %v, class %q, attempts %d",
				id, d.State, d.PublishedAt, d.ErrorClass, d.Attempts)
		}
	}

	sample := h.sampleWatermark(t)
	late := h.add(t, orderEvents("a")...) // a#2, after the sample
	if err := h.Store.SaveCheckpoint(ctx, "streamer", store.Checkpoint{Epoch: rb.Stream.Epoch, Position: "pos-2",
		Watermark: sample.At}); err != nil {
		t.Fatal(err)
	}
	// A watermark never moves back.
	if err := h.Store.SaveCheckpoint(ctx, "streamer", store.Checkpoint{Epoch: rb.Stream.Epoch, Position: "pos-3",
		Watermark: sample.At.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	row, _, err := h.Store.Stream(ctx)
	if err != nil || !row.Watermark.Equal(sample.At) || row.Position != "pos-3" {
		t.Fatalf("stream row: watermark %v, position %q (%v); want %v, pos-3", row.Watermark, row.Position, err, sample.At)
	}
	for _, id := range early {
		if d := h.show(t, id); d.State != store.StatePublished {
			t.Errorf("event %s below the watermark: state %s, want published", id, d.State)
		}
	}
	if d := h.show(t, late[0]); d.State != store.StateStreaming {
		t.Errorf("event %s after the watermark: state %s, want streaming", late[0], d.State)
	}
	if n, err := h.Store.CountUnpublished(ctx); err != nil || n != 1 {
		t.Errorf("unpublished: %d (%v), want 1 (the event after the watermark)", n, err)
	}
	if b, err := h.Store.ReadBacklog(ctx); err != nil || b.Ready != 1 || b.Streaming != 1 || b.PublishedLastHour != 2 {
		t.Errorf("backlog: ready %d, streaming %d, published in the hour %d (%v); want 1, 1 (the event after the "+
			"watermark) and 2 (those below it)", b.Ready, b.Streaming, b.PublishedLastHour, err)
	}

	// The stream stops; a polling relay takes over from the watermark.
	if err := h.Store.Leave(ctx, "streamer"); err != nil {
		t.Fatal(err)
	}
	poll := h.join(t, "poll", time.Minute)
	if !poll.own.All() {
		t.Fatalf("the polling relay owns %d buckets once nobody streams, want all", len(poll.own.Buckets))
	}
	c, err := h.Store.Claim(ctx, store.ClaimRequest{Ownership: poll.own, Limit: 100, Policy: store.OrderHold,
		Known: poll.known, Watermark: row.Watermark})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Events); len(got) != 1 || got[0] != late[0] || c.Held != 0 {
		t.Fatalf("takeover claim: %v, held %d; want only %s (a#2: its predecessor a#1 is below the watermark, done)",
			got, c.Held, late[0])
	}

	// Replay takes the events below the watermark as published.
	page, err := h.Store.ReplayPage(ctx, store.ReplaySelection{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)},
		store.ReplayPosition{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page); len(got) != 2 || !slicesEqualSet(got, early) {
		t.Errorf("replay page: %v, want the two events below the watermark %v", got, early)
	}

	// Cleanup deletes them once past retention; the later one stays.
	h.Backdate(t, 2*time.Hour, early...)
	rep, err := h.Store.Cleanup(ctx, store.CleanupRequest{Retention: time.Hour, BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != 2 {
		t.Errorf("cleanup deleted %d events, want the 2 below the watermark", rep.Events)
	}
	if d := h.show(t, late[0]); d.ID != late[0] {
		t.Errorf("cleanup deleted the event after the watermark")
	}
}

// testWatermarkSampleWaitsForOpenTransactions: the contract S2 rests on
// (docs/design.md, section 9.3). While a transaction that inserted an
// event is open, a sample either says it must wait for it, or lies at or
// before the event's next_attempt_at; once the transaction commits, the
// sample can be used.
func testWatermarkSampleWaitsForOpenTransactions(t *testing.T, h Harness) {
	w := h.writer(t)
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	open, err := w.Add(ctx, tx, orderEvents("open")...)
	if err != nil {
		t.Fatal(err)
	}
	sample, err := h.Store.SampleWatermark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	endedWhileOpen, err := h.Store.WatermarkEnded(ctx, sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	d := h.show(t, open[0])
	if endedWhileOpen && (d.NextAttemptAt == nil || d.NextAttemptAt.Before(sample.At)) {
		t.Fatalf("a usable sample at %v lies after the row of a transaction open when it was taken (next_attempt_at %v)",
			sample.At, d.NextAttemptAt)
	}
	h.sampleWatermark(t) // and a sample is usable once nothing is open
	wait.Until(t, 10*time.Second, "the first sample usable once the transaction committed", func() bool {
		ended, err := h.Store.WatermarkEnded(ctx, sample)
		return err == nil && ended
	})
}

func slicesEqualSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
