package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
)

// testBacklogAgesCountFromCreation: events stopped by a Kafka
// configuration failure are given back at every round with
// next_attempt_at reset; the backlog still reports them as old as they
// are (since occurred_at), counted by their class (issue 21, defect 6).
func testBacklogAgesCountFromCreation(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("x", "y", "z")...)
	h.Backdate(t, time.Hour, added...)
	r := h.join(t, "relay-a", time.Minute)
	for round := range 2 { // two rounds: each release resets next_attempt_at
		c := r.claim(t, 100)
		if len(c.Events) != 3 {
			t.Fatalf("round %d: claimed %d, want 3", round, len(c.Events))
		}
		var out store.Outcome
		for _, e := range c.Events {
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Class: "authorization",
				Message: "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics"})
		}
		r.settle(t, c, out)
	}
	b := h.backlog(t)
	if b.Ready != 3 || b.OldestReadyAge < 59*time.Minute {
		t.Errorf("ready %d, oldest ready age %v; want 3 events about an hour old (since they occurred, "+
			"whatever the releases did to next_attempt_at)", b.Ready, b.OldestReadyAge)
	}
	got := b.ReadyByClass["authorization"]
	if got.Events != 3 || got.OldestAge < 59*time.Minute || len(b.ReadyByClass) != 1 {
		t.Errorf("ready by class %+v; want authorization: 3 events, oldest about an hour", b.ReadyByClass)
	}
	if len(b.FailuresLastHour) != 0 {
		t.Errorf("failures last hour %v: a configuration failure charges no event", b.FailuresLastHour)
	}
}

// searchAll pages through a search, checking every page's size and that
// no event shows twice; it returns the ids in the order shown.
func searchAll(t *testing.T, h Harness, s store.EventSearch) []string {
	t.Helper()
	var seen []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("search %+v: no end after 100 pages", s)
		}
		p, err := h.Store.SearchEvents(ctx, s)
		if err != nil {
			t.Fatalf("search %+v: %v", s, err)
		}
		if s.Limit > 0 && len(p.Events) > s.Limit {
			t.Fatalf("page of %d events, limit %d", len(p.Events), s.Limit)
		}
		for _, e := range p.Events {
			if slices.Contains(seen, e.ID) {
				t.Fatalf("event %s shown twice (cursor %q)", e.ID, s.After)
			}
			seen = append(seen, e.ID)
		}
		if p.Next == "" {
			return seen
		}
		s.After = p.Next
	}
}

// testSearchEvents: every search path pages with a keyset cursor and
// shows each matching event once, newest first (an aggregate: in its
// order), states named by the store; bad input is refused naming the
// field.
func testSearchEvents(t *testing.T, h Harness) {
	first := h.add(t, orderEvents("a", "b", "c", "a")...)
	invoices := h.add(t, outbox.Event{AggregateType: "invoice", AggregateID: "i1", EventType: "invoice.sent",
		SchemaVersion: 1, Payload: []byte(`{}`)})
	r := h.join(t, "relay-a", time.Minute)
	r.quarantine(t, first[1]) // b#1 quarantined; the rest published
	later := h.add(t, orderEvents("d", "e")...)
	all := append(append(append([]string{}, first...), invoices...), later...)
	newestFirst := slices.Clone(all)
	slices.Sort(newestFirst)
	slices.Reverse(newestFirst)
	// The time range bounds the time in the ids (UUIDv7), by millisecond.
	bound := time.UnixMilli(uuidMillis(t, later[0]))

	tests := []struct {
		name   string
		search store.EventSearch
		want   []string
	}{
		{"everything, two at a time", store.EventSearch{Limit: 2}, newestFirst},
		{"one event by id", store.EventSearch{EventID: strings.ToUpper(first[2])}, []string{first[2]}},
		{"an unknown id", store.EventSearch{EventID: "01890000-0000-7000-8000-000000000000"}, nil},
		{"an aggregate type", store.EventSearch{AggregateType: "invoice"}, invoices},
		{"one aggregate, in its order", store.EventSearch{AggregateType: "order", AggregateID: "a", Limit: 1}, []string{first[0], first[3]}},
		{"an event type", store.EventSearch{EventType: "invoice.sent"}, invoices},
		{"quarantined", store.EventSearch{State: store.StateQuarantined}, []string{first[1]}},
		{"pending", store.EventSearch{State: store.StatePending, Limit: 1}, []string{later[1], later[0]}},
		{"added before the later events", store.EventSearch{To: bound},
			slices.DeleteFunc(slices.Clone(newestFirst), func(id string) bool { return uuidMillis(t, id) >= bound.UnixMilli() })},
		{"added from the later events on", store.EventSearch{From: bound, Limit: 1},
			slices.DeleteFunc(slices.Clone(newestFirst), func(id string) bool { return uuidMillis(t, id) < bound.UnixMilli() })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := searchAll(t, h, tt.search)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
	p, err := h.Store.SearchEvents(ctx, store.EventSearch{EventID: first[1]})
	if err != nil || len(p.Events) != 1 || p.Events[0].State != store.StateQuarantined || p.Events[0].ErrorClass != "too_large" {
		t.Errorf("the quarantined event: %+v, %v", p.Events, err)
	}

	bad := []struct {
		name   string
		search store.EventSearch
		field  string
	}{
		{"an id that is no UUID", store.EventSearch{EventID: "1; DROP TABLE outbox_events"}, "event id"},
		{"an unknown state", store.EventSearch{State: "stuck"}, "state"},
		{"an aggregate id alone", store.EventSearch{AggregateID: "a"}, "aggregate id"},
		{"a reversed range", store.EventSearch{From: time.Now(), To: time.Now().Add(-time.Hour)}, "time range"},
		{"a limit too large", store.EventSearch{Limit: store.EventPageLimitMax + 1}, "limit"},
		{"a cursor that is no id", store.EventSearch{After: "zzz"}, "cursor"},
		{"a NUL in the event type", store.EventSearch{EventType: "a\x00b"}, "event type"},
	}
	for _, tt := range bad {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			_, err := h.Store.SearchEvents(ctx, tt.search)
			if err == nil || !strings.HasPrefix(err.Error(), tt.field) {
				t.Errorf("error %v, want one naming %q", err, tt.field)
			}
		})
	}
}

// uuidMillis is the millisecond in a UUIDv7.
func uuidMillis(t *testing.T, id string) int64 {
	t.Helper()
	var ms int64
	if _, err := fmt.Sscanf(strings.ReplaceAll(id[:13], "-", ""), "%x", &ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// testAggregateTimeline: an aggregate's events in order, with the event
// that holds the rest marked and the events waiting behind it counted.
func testAggregateTimeline(t *testing.T, h Harness) {
	h.add(t, orderEvents("p")...)
	r := h.join(t, "relay-a", time.Minute)
	r.quarantine(t) // publishes p#1
	more := h.add(t, orderEvents("p", "p", "p")...)
	r.quarantine(t, more[0]) // p#2 quarantined, p#3 and p#4 held behind it
	key := store.AggregateKey{AggregateType: "order", AggregateID: "p"}

	tl, err := h.Store.AggregateTimeline(ctx, key, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tl.Events {
		got = append(got, fmt.Sprintf("%d:%s:%v", e.AggregateSeq, e.State, e.HoldsTheRest))
	}
	want := []string{"1:published:false", "2:quarantined:true", "3:held:false"}
	if !slices.Equal(got, want) || tl.Head != more[0] || tl.Waiting != 1 || tl.Next != 3 {
		t.Errorf("timeline %v head %s waiting %d next %d; want %v head %s waiting 1 next 3",
			got, tl.Head, tl.Waiting, tl.Next, want, more[0])
	}
	rest, err := h.Store.AggregateTimeline(ctx, key, tl.Next, 3)
	if err != nil || len(rest.Events) != 1 || rest.Events[0].ID != more[2] || rest.Next != 0 {
		t.Errorf("second page %+v, %v; want p#4 alone and no further page", rest.Events, err)
	}
	if _, err := h.Store.AggregateTimeline(ctx, store.AggregateKey{AggregateType: "order"}, 0, 3); err == nil {
		t.Error("a timeline without an aggregate id was read")
	}
}

// testAuditLogPages: the operators' actions, newest first, page by page.
func testAuditLogPages(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("q1", "q2", "q3")...)
	r := h.join(t, "relay-a", time.Minute)
	r.quarantine(t, added...)
	for i, id := range added {
		var err error
		if i == 1 {
			_, err = h.Store.Discard(ctx, id, "ops", fmt.Sprintf("reason %d", i), false)
		} else {
			_, err = h.Store.Retry(ctx, id, "ops", fmt.Sprintf("reason %d", i), false)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var before int64
	for range 5 {
		p, err := h.Store.ReadAuditLog(ctx, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			got = append(got, e.Action+" "+e.EventID+" "+e.Reason)
		}
		if before = p.Next; before == 0 {
			break
		}
	}
	want := []string{"retry " + added[2] + " reason 2", "discard " + added[1] + " reason 1", "retry " + added[0] + " reason 0"}
	if !slices.Equal(got, want) {
		t.Errorf("audit log\n got %v\nwant %v", got, want)
	}
	if _, err := h.Store.ReadAuditLog(ctx, -1, 2); err == nil {
		t.Error("a negative cursor was accepted")
	}
}

// testListReplays: saved replay checkpoints with their progress.
func testListReplays(t *testing.T, h Harness) {
	sel := store.ReplaySelection{From: time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC(),
		To: time.Now().Truncate(time.Millisecond).UTC(), AggregateType: "order"}
	if err := h.Store.SaveReplayCheckpoint(ctx, store.ReplayCheckpoint{Name: "first", Selection: sel, Replayed: 7}, true); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.SaveReplayCheckpoint(ctx, store.ReplayCheckpoint{Name: "second", Selection: sel, Replayed: 3}, false); err != nil {
		t.Fatal(err)
	}
	list, err := h.Store.ListReplays(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list {
		got = append(got, fmt.Sprintf("%s:%d:%v:%s", p.Name, p.Replayed, p.Finished, p.Selection.AggregateType))
		if !p.Selection.From.Equal(sel.From) || p.UpdatedAt.IsZero() {
			t.Errorf("%s: selection %+v, updated %v", p.Name, p.Selection, p.UpdatedAt)
		}
	}
	if want := []string{"second:3:false:order", "first:7:true:order"}; !slices.Equal(got, want) {
		t.Errorf("replays %v, want %v", got, want)
	}
}

// testQuarantineListPages: quarantined events listed page by page after a
// cursor, even when they share their quarantined_at (quarantined by one
// settlement).
func testQuarantineListPages(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("k1", "k2", "k3", "k4", "k5")...)
	r := h.join(t, "relay-a", time.Minute)
	r.quarantine(t, added...)
	var got []string
	f := store.QuarantineFilter{Limit: 2}
	for range 5 {
		list, err := h.Store.ListQuarantined(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			break
		}
		for _, q := range list {
			got = append(got, q.ID)
		}
		last := list[len(list)-1]
		f.After = &store.QuarantineCursor{QuarantinedAt: last.QuarantinedAt, ID: last.ID}
	}
	want := slices.Clone(added)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("paged %v, want %v", got, want)
	}
}

// testDeliveryDelay: the delay from occurred_at to publication of the
// events published in the last hour, by quantile.
func testDeliveryDelay(t *testing.T, h Harness) {
	if d, err := h.Store.ReadDeliveryDelay(ctx); err != nil || d.Events != 0 {
		t.Fatalf("nothing published: %+v, %v", d, err)
	}
	old := h.add(t, orderEvents("d1")...)
	h.Backdate(t, 10*time.Minute, old...) // occurred 10 minutes before it is published below
	h.add(t, orderEvents("d2", "d3", "d4")...)
	r := h.join(t, "relay-a", time.Minute)
	r.quarantine(t) // publishes everything
	d, err := h.Store.ReadDeliveryDelay(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Events != 4 || d.Max < 10*time.Minute || d.P50 > time.Minute || d.P99 < 10*time.Minute {
		t.Errorf("delivery delay %+v; want 4 events, p50 under a minute, p99 and max about 10 minutes", d)
	}
}
