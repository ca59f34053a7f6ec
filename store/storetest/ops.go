package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
)

func testQuarantineRetry(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	added := h.add(t, orderEvents("p", "p", "p", "q")...)
	r.quarantine(t, added[0])

	list, err := h.Store.ListQuarantined(ctx, store.QuarantineFilter{ErrorClass: "too_large"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != added[0] || list[0].HeldBehind != 2 || list[0].AggregateSeq != 1 {
		t.Fatalf("quarantine list: %+v, want %s (#1) with 2 events held behind it", list, added[0])
	}
	detail := h.show(t, added[0])
	if detail.State != store.StateQuarantined || len(detail.Failures) != 1 || detail.Failures[0].ErrorClass != "too_large" ||
		detail.HeldBehind != 2 || detail.Audit == nil || len(detail.Audit) != 0 {
		t.Errorf("show: state %s, held behind %d, failures %+v, audit %#v", detail.State, detail.HeldBehind, detail.Failures, detail.Audit)
	}

	dry, err := h.Store.Retry(ctx, added[0], "alice", "topic limit raised", true)
	if err != nil || !dry.Changed || dry.Released != 2 || dry.State != store.StatePending {
		t.Fatalf("dry-run retry: %+v, %v", dry, err)
	}
	if again := h.show(t, added[0]); again.State != store.StateQuarantined || len(again.Audit) != 0 {
		t.Fatalf("dry run changed the event to %s (audit %d)", again.State, len(again.Audit))
	}

	ch, err := h.Store.Retry(ctx, added[0], "alice", "topic limit raised", false)
	if err != nil || !ch.Changed || ch.Released != 2 {
		t.Fatalf("retry: %+v, %v", ch, err)
	}
	if ch2, err := h.Store.Retry(ctx, added[0], "alice", "again", false); err != nil || ch2.Changed || ch2.State != store.StatePending {
		t.Fatalf("second retry: %+v, %v; want a no-op", ch2, err)
	}
	// The retried head and its held successors come back as one chain, in
	// order, with a fresh attempt count.
	c := r.claim(t, 100)
	if got := strings.Join(ids(c.Events), ","); got != strings.Join(added[:3], ",") {
		t.Fatalf("after retry claimed %v, want %v", ids(c.Events), added[:3])
	}
	if c.Events[0].Attempts != 1 {
		t.Errorf("retried event is on attempt %d, want 1", c.Events[0].Attempts)
	}
	detail = h.show(t, added[0])
	if len(detail.Audit) != 1 || detail.Audit[0].Actor != "alice" || detail.Audit[0].Action != store.AuditRetry ||
		detail.Audit[0].Reason != "topic limit raised" || !strings.Contains(string(detail.Audit[0].Details), `"released":2`) {
		t.Errorf("audit after retry: %+v, want one retry by alice releasing 2", detail.Audit)
	}
	// Every dialect's times come back in UTC (store.UTC), the audit's and
	// the failure log's as much as the row's.
	if len(detail.Audit) == 0 || len(detail.Failures) == 0 {
		t.Fatalf("after retry: %d audit records, %d failures; want both", len(detail.Audit), len(detail.Failures))
	}
	for what, at := range map[string]time.Time{"occurred_at": detail.OccurredAt, "audit at": detail.Audit[0].At,
		"failure at": detail.Failures[0].At} {
		if at.Location() != time.UTC || at.IsZero() {
			t.Errorf("%s %v: want a time in UTC", what, at)
		}
	}
}

func testDiscard(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	added := h.add(t, orderEvents("p", "p")...)
	r.quarantine(t, added[0])

	if _, err := h.Store.Discard(ctx, added[0], "bob", " ", false); err == nil {
		t.Fatal("discard without a reason was accepted")
	}
	if d := h.show(t, added[0]); d.State != store.StateQuarantined {
		t.Fatalf("a refused discard changed the event to %s", d.State)
	}
	ch, err := h.Store.Discard(ctx, added[0], "bob", "customer deleted; event obsolete", false)
	if err != nil || !ch.Changed || ch.Released != 1 || ch.State != store.StateDiscarded {
		t.Fatalf("discard: %+v, %v", ch, err)
	}
	if ch, err := h.Store.Discard(ctx, added[0], "bob", "again", false); err != nil || ch.Changed || ch.State != store.StateDiscarded {
		t.Fatalf("second discard: %+v, %v; want a no-op", ch, err)
	}
	if ch, err := h.Store.Retry(ctx, added[0], "bob", "", false); err != nil || ch.Changed || ch.State != store.StateDiscarded {
		t.Fatalf("retry of a discarded event: %+v, %v; want a no-op reporting it discarded", ch, err)
	}
	if _, err := h.Store.Retry(ctx, "00000000-0000-0000-0000-000000000000", "bob", "", false); !errors.Is(err, store.ErrEventNotFound) {
		t.Errorf("retry of an unknown id: %v, want ErrEventNotFound", err)
	}
	d := h.show(t, added[0])
	if d.State != store.StateDiscarded || d.DiscardedAt == nil || len(d.Audit) != 1 ||
		d.Audit[0].Actor != "bob" || d.Audit[0].Action != store.AuditDiscard || !strings.Contains(d.Audit[0].Reason, "obsolete") {
		t.Errorf("discarded event: state %s, audit %+v", d.State, d.Audit)
	}
	// The successor no longer waits: a discarded event counts as done.
	c := r.claim(t, 100)
	if len(c.Events) != 1 || c.Events[0].ID != added[1] {
		t.Fatalf("after discard claimed %v, want %s", ids(c.Events), added[1])
	}
	if q, _ := h.Store.ListQuarantined(ctx, store.QuarantineFilter{}); len(q) != 0 {
		t.Errorf("a discarded event is still listed as quarantined: %+v", q)
	}
}

func testQuarantineListFilters(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	added := h.add(t, orderEvents("f1", "f2", "f3")...)
	h.add(t, outbox.Event{AggregateType: "invoice", AggregateID: "f1", EventType: "invoice.sent", SchemaVersion: 1, Payload: []byte(`{}`)})
	c := r.claim(t, 100)
	out := store.Outcome{}
	var invoice string
	for _, e := range c.Events {
		class := "too_large"
		if e.AggregateID == "f2" {
			class = "encode"
		}
		if e.AggregateType == "invoice" {
			invoice = e.ID
		}
		out.Failed = append(out.Failed, store.Failure{EventID: e.ID, Class: class, Message: class, Quarantine: true})
	}
	r.settle(t, c, out)
	since := h.now(t).Add(-time.Minute)

	for _, tt := range []struct {
		name string
		f    store.QuarantineFilter
		want []string
	}{
		{"all", store.QuarantineFilter{}, append(append([]string{}, added...), invoice)},
		{"class", store.QuarantineFilter{ErrorClass: "encode"}, added[1:2]},
		{"aggregate type", store.QuarantineFilter{AggregateType: "invoice"}, []string{invoice}},
		{"aggregate", store.QuarantineFilter{AggregateType: "order", AggregateID: "f1"}, added[:1]},
		{"event type", store.QuarantineFilter{EventType: "order.created", ErrorClass: "too_large"}, []string{added[0], added[2]}},
		{"since", store.QuarantineFilter{Since: since, ErrorClass: "encode"}, added[1:2]},
		{"until", store.QuarantineFilter{Until: since}, nil},
		{"limit", store.QuarantineFilter{Limit: 2}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			list, err := h.Store.ListQuarantined(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range list {
				got = append(got, q.ID)
			}
			if tt.name == "limit" {
				if len(got) != 2 {
					t.Errorf("limit 2 listed %d", len(got))
				}
				return
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
		})
	}
}

func testBacklog(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	// p: head quarantined, one held behind it; r: one failure backing off;
	// s: one published; then four ready events (one of them claimed: a
	// claim writes nothing, so it counts as ready).
	added := h.add(t, orderEvents("p", "p", "r", "s")...)
	c := r.claim(t, 100)
	if len(c.Events) != 4 {
		t.Fatalf("claimed %d, want 4", len(c.Events))
	}
	r.settle(t, c, store.Outcome{
		Published: []string{added[3]},
		Failed: []store.Failure{
			{EventID: added[0], Class: "too_large", Message: "too large", Quarantine: true},
			{EventID: added[2], Class: "timeout", Message: "timeout", RetryAfter: time.Hour},
		},
		Unsent: []store.Unsent{{EventID: added[1], Behind: added[0]}},
	})
	h.add(t, orderEvents("t1", "t2", "t3", "u")...)
	if lc := r.claim(t, 1); len(lc.Events) != 1 {
		t.Fatalf("second claim took %d, want 1", len(lc.Events))
	}

	b := h.backlog(t)
	want := store.Backlog{Ready: 4, BackingOff: 1, Held: 1, Quarantined: 1, HeldAggregates: 1, PublishedLastHour: 1}
	got := b
	got.FailuresLastHour, got.OldestReadyAge, got.OldestParkedAge, got.OldestQuarantinedAge = nil, 0, 0, 0
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backlog\n got %+v\nwant %+v", got, want)
	}
	if b.FailuresLastHour["too_large"] != 1 || b.FailuresLastHour["timeout"] != 1 {
		t.Errorf("failures last hour: %v", b.FailuresLastHour)
	}
	if b.OldestParkedAge <= 0 || b.OldestQuarantinedAge <= 0 || b.OldestReadyAge < 0 {
		t.Errorf("oldest parked %v, quarantined %v, ready %v: want positive ages", b.OldestParkedAge, b.OldestQuarantinedAge, b.OldestReadyAge)
	}

	// Ten days old and ready: the oldest claimable age says so.
	h.Backdate(t, 240*time.Hour, added[2])
	if _, err := h.Store.Retry(ctx, added[0], "ops", "", false); err != nil { // p#1 and p#2 ready again
		t.Fatal(err)
	}
	if b := h.backlog(t); b.OldestReadyAge < 239*time.Hour || b.Ready != 7 || b.BackingOff != 0 {
		t.Errorf("after backdating the backoff: oldest ready %v, ready %d, backing off %d; want ~240h, 7, 0", b.OldestReadyAge, b.Ready, b.BackingOff)
	}
}

// testCleanup: with published-old, published-new, unpublished-old and
// quarantined-old events, cleanup deletes exactly the published-old ones,
// in batches no larger than the batch size; of the failure records past
// the retention, only those of published or discarded events; inbox rows
// by their own retention.
func testCleanup(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	group := func(n int, prefix string) []string {
		aggs := make([]string, n)
		for i := range aggs {
			aggs[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return h.add(t, orderEvents(aggs...)...)
	}
	publishedOld := group(23, "po")
	publishedNew := group(5, "pn")
	quarantinedOld := group(3, "qo")
	r.quarantine(t, quarantinedOld...) // publishes the other two groups
	discardedOld := group(2, "do")
	r.quarantine(t, discardedOld...)
	for _, id := range discardedOld {
		if _, err := h.Store.Discard(ctx, id, "ops", "test", false); err != nil {
			t.Fatal(err)
		}
	}
	// Each fails once: retried is published at its next claim, backingOff
	// waits an hour.
	retried, backingOff := group(2, "ro"), group(2, "bo")
	c := r.claim(t, 100)
	if len(c.Events) != 4 {
		t.Fatalf("claimed %v, want %v and %v", ids(c.Events), retried, backingOff)
	}
	var failed []store.Failure
	for i, id := range append(append([]string{}, retried...), backingOff...) {
		failed = append(failed, store.Failure{EventID: id, Class: "timeout", Message: "timeout", RetryAfter: time.Duration(i/2) * time.Hour})
	}
	r.settle(t, c, store.Outcome{Failed: failed})
	if c := r.claim(t, 100); len(c.Events) != len(retried) {
		t.Fatalf("claimed %v, want the retried %v", ids(c.Events), retried)
	} else {
		r.settle(t, c, store.Outcome{Published: retried})
	}
	unpublishedOld := group(4, "uo")
	var old []string
	for _, g := range [][]string{publishedOld, quarantinedOld, unpublishedOld, discardedOld, retried, backingOff} {
		old = append(old, g...)
	}
	h.Backdate(t, 10*24*time.Hour, old...)
	h.Backdate(t, time.Hour, publishedNew...)

	// Inbox rows: 7 older than the inbox retention, 2 younger.
	consumed := make([]string, 9)
	tx, err := h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range consumed {
		consumed[i] = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
		if _, err := h.Store.Dialect().InsertConsumed(ctx, tx, "inventory", consumed[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	h.BackdateConsumed(t, 40*24*time.Hour, "inventory", consumed[:7]...)
	h.BackdateConsumed(t, 24*time.Hour, "inventory", consumed[7:]...)

	if _, err := h.Store.Cleanup(ctx, store.CleanupRequest{Retention: 7 * 24 * time.Hour, InboxRetention: 24 * time.Hour, BatchSize: 5}); err == nil {
		t.Fatal("an inbox retention shorter than the replay window was accepted")
	}
	rep, err := h.Store.Cleanup(ctx, store.CleanupRequest{Retention: 7 * 24 * time.Hour, InboxRetention: 30 * 24 * time.Hour, BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != int64(len(publishedOld)+len(retried)) {
		t.Errorf("deleted %d events, want %d", rep.Events, len(publishedOld)+len(retried))
	}
	// Failure records go with their event's publication or discard, past
	// the retention; an unpublished event keeps its history (issue 21,
	// defect 5: cleanup deleted the failures of quarantined events).
	if want := int64(len(discardedOld) + len(retried)); rep.Failures != want {
		t.Errorf("deleted %d failure records, want %d (those of the discarded and the published events)", rep.Failures, want)
	}
	for name, group := range map[string][]string{"quarantined-old": quarantinedOld, "backing-off-old": backingOff, "discarded-old": discardedOld} {
		want := map[bool]int{true: 0, false: 1}[name == "discarded-old"]
		for _, id := range group {
			if d, err := h.Store.ShowEvent(ctx, id); err != nil || len(d.Failures) != want {
				t.Errorf("%s event %s after cleanup: %d failure record(s) (%v), want %d", name, id, len(d.Failures), err, want)
			}
		}
	}
	if rep.Inbox != 7 {
		t.Errorf("deleted %d inbox rows, want the 7 past the inbox retention", rep.Inbox)
	}
	if rep.LargestBatch > 5 || rep.Batches < 5 {
		t.Errorf("%d batches, largest %d: want batches of at most 5", rep.Batches, rep.LargestBatch)
	}
	for _, id := range publishedOld {
		if _, err := h.Store.ShowEvent(ctx, id); !errors.Is(err, store.ErrEventNotFound) {
			t.Fatalf("published-old event %s survived cleanup (%v)", id, err)
		}
	}
	for name, group := range map[string][]string{"published-new": publishedNew, "unpublished-old": unpublishedOld, "quarantined-old": quarantinedOld} {
		for _, id := range group {
			if _, err := h.Store.ShowEvent(ctx, id); err != nil {
				t.Errorf("%s event %s: %v", name, id, err)
			}
		}
	}
	// The inbox still knows the young rows: inserting them again is a
	// duplicate.
	tx, err = h.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i, id := range consumed {
		dup, err := h.Store.Dialect().InsertConsumed(ctx, tx, "inventory", id)
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 7; dup != want {
			t.Errorf("inbox row %d after cleanup: duplicate %v, want %v", i, dup, want)
		}
	}
	if rep, err := h.Store.Cleanup(ctx, store.CleanupRequest{Retention: 7 * 24 * time.Hour, BatchSize: 5}); err != nil || rep.Events != 0 {
		t.Errorf("second cleanup: %+v, %v; want nothing left to delete", rep, err)
	}
}

func testReplayPages(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	before := h.now(t).Add(-time.Minute)
	added := h.add(t, orderEvents("b", "a", "b", "a", "c")...)
	unpublished := h.add(t, orderEvents("a")...)[0]
	c := r.claim(t, 100)
	r.settle(t, c, store.Outcome{Published: added, Unsent: []store.Unsent{{EventID: unpublished}}})
	after := h.now(t).Add(time.Minute)

	sel := store.ReplaySelection{From: before, To: after}
	var got []string
	pos := store.ReplayPosition{}
	for page := 0; ; page++ {
		events, err := h.Store.ReplayPage(ctx, sel, pos, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			break
		}
		if len(events) > 2 {
			t.Fatalf("page of %d events, want at most 2", len(events))
		}
		for _, e := range events {
			got = append(got, e.ID)
		}
		last := events[len(events)-1]
		pos = store.ReplayPosition{AggregateType: last.AggregateType, AggregateID: last.AggregateID, AggregateSeq: last.AggregateSeq}
	}
	// Aggregate order: a#1, a#2, b#1, b#2, c#1; the unpublished a#3 is not
	// replayed.
	want := []string{added[1], added[3], added[0], added[2], added[4]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replayed %v, want %v", got, want)
	}
	for _, tt := range []struct {
		name string
		sel  store.ReplaySelection
		want int
	}{
		{"aggregate", store.ReplaySelection{From: before, To: after, AggregateType: "order", AggregateID: "b"}, 2},
		{"event type", store.ReplaySelection{From: before, To: after, EventType: "order.cancelled"}, 0},
		{"range before", store.ReplaySelection{From: before.Add(-time.Hour), To: before}, 0},
	} {
		events, err := h.Store.ReplayPage(ctx, tt.sel, store.ReplayPosition{}, 100)
		if err != nil || len(events) != tt.want {
			t.Errorf("%s: %d events (%v), want %d", tt.name, len(events), err, tt.want)
		}
	}
}

func testReplayCheckpoints(t *testing.T, h Harness) {
	now := h.now(t)
	sel := store.ReplaySelection{From: now.Add(-time.Hour), To: now, AggregateType: "order"}
	cp, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", sel, false)
	if err != nil || cp.Replayed != 0 || cp.Finished || cp.Position != (store.ReplayPosition{}) {
		t.Fatalf("fresh checkpoint: %+v, %v", cp, err)
	}
	cp.Position = store.ReplayPosition{AggregateType: "order", AggregateID: "42", AggregateSeq: 7}
	cp.Replayed = 200
	if err := h.Store.SaveReplayCheckpoint(ctx, cp, false); err != nil {
		t.Fatal(err)
	}
	got, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", sel, false)
	if err != nil || got.Position != cp.Position || got.Replayed != 200 || got.Finished {
		t.Fatalf("saved checkpoint loads as %+v, %v", got, err)
	}
	other := sel
	other.AggregateType = "invoice"
	if _, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", other, false); !errors.Is(err, store.ErrCheckpointMismatch) {
		t.Errorf("another selection under the same name: %v, want ErrCheckpointMismatch", err)
	}
	moved := sel
	moved.From, moved.To = sel.From.Add(time.Minute), sel.To.Add(time.Minute)
	if _, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", moved, false); !errors.Is(err, store.ErrCheckpointMismatch) {
		t.Errorf("a moved range: %v, want ErrCheckpointMismatch", err)
	}
	resumed, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", moved, true)
	if err != nil || !resumed.Selection.From.Equal(sel.From) || resumed.Position != cp.Position {
		t.Errorf("resume with the saved range: %+v, %v", resumed, err)
	}
	if err := h.Store.SaveReplayCheckpoint(ctx, got, true); err != nil {
		t.Fatal(err)
	}
	if done, err := h.Store.LoadReplayCheckpoint(ctx, "nightly", sel, false); err != nil || !done.Finished {
		t.Errorf("finished checkpoint loads as %+v, %v", done, err)
	}
}
