package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

// quarantineFirst claims everything and quarantines the event id, releasing
// the other claimed events of its aggregate behind it and publishing the
// rest.
func quarantineFirst(t *testing.T, st *mysql.Store, id string) {
	t.Helper()
	c := claim(t, st, "relay-a", 100, time.Minute)
	var out store.Outcome
	var poison store.Event
	for _, e := range c.Events {
		if e.ID == id {
			poison = e
		}
	}
	for _, e := range c.Events {
		switch {
		case e.ID == id:
			out.Failed = append(out.Failed, store.Failure{EventID: id, Class: "too_large", Message: "MESSAGE_TOO_LARGE", Quarantine: true})
		case e.AggregateID == poison.AggregateID && e.AggregateSeq > poison.AggregateSeq:
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Behind: id})
		default:
			out.Published = append(out.Published, e.ID)
		}
	}
	if _, err := st.Settle(context.Background(), c.Lease, out, store.OrderHold); err != nil {
		t.Fatal(err)
	}
}

func TestQuarantineRetryReleasesHeldEventsInOrder(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	ctx := context.Background()
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p", "p", "p", "q")...)
	quarantineFirst(t, st, added[0])

	list, err := st.ListQuarantined(ctx, mysql.QuarantineFilter{ErrorClass: "too_large"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != added[0] || list[0].HeldBehind != 2 {
		t.Fatalf("quarantine list: %+v, want %s with 2 events held behind it", list, added[0])
	}
	if other, _ := st.ListQuarantined(ctx, mysql.QuarantineFilter{ErrorClass: "timeout"}); len(other) != 0 {
		t.Errorf("class filter timeout listed %d events", len(other))
	}
	detail, err := st.ShowEvent(ctx, added[0])
	if err != nil {
		t.Fatal(err)
	}
	if detail.State != "quarantined" || len(detail.Failures) != 1 || detail.Failures[0].ErrorClass != "too_large" {
		t.Errorf("show: state %s, failures %+v", detail.State, detail.Failures)
	}

	dry, err := st.Retry(ctx, added[0], "alice", "topic limit raised", true)
	if err != nil || !dry.Changed || dry.Released != 2 {
		t.Fatalf("dry-run retry: %+v, %v", dry, err)
	}
	if again, _ := st.ShowEvent(ctx, added[0]); again.State != "quarantined" {
		t.Fatalf("dry run changed the event to %s", again.State)
	}

	ch, err := st.Retry(ctx, added[0], "alice", "topic limit raised", false)
	if err != nil || !ch.Changed || ch.Released != 2 {
		t.Fatalf("retry: %+v, %v", ch, err)
	}
	if ch2, err := st.Retry(ctx, added[0], "alice", "again", false); err != nil || ch2.Changed {
		t.Fatalf("second retry: %+v, %v; want a no-op", ch2, err)
	}
	// The retried head and its held successors come back as one chain, in
	// order, with a fresh attempt count.
	c := claim(t, st, "relay-b", 100, time.Minute)
	if got := strings.Join(ids(c.Events), ","); got != strings.Join(added[:3], ",") {
		t.Fatalf("after retry claimed %v, want %v", ids(c.Events), added[:3])
	}
	if c.Events[0].Attempts != 1 {
		t.Errorf("retried event is on attempt %d, want 1", c.Events[0].Attempts)
	}
	detail, _ = st.ShowEvent(ctx, added[0])
	if len(detail.Audit) != 1 || detail.Audit[0].Actor != "alice" || detail.Audit[0].Action != mysql.AuditRetry {
		t.Errorf("audit after retry: %+v, want one retry by alice", detail.Audit)
	}
}

func TestDiscardNeedsReasonAndIsAudited(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	ctx := context.Background()
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p", "p")...)
	quarantineFirst(t, st, added[0])

	if _, err := st.Discard(ctx, added[0], "bob", " ", false); err == nil {
		t.Fatal("discard without a reason was accepted")
	}
	ch, err := st.Discard(ctx, added[0], "bob", "customer deleted; event obsolete", false)
	if err != nil || !ch.Changed || ch.Released != 1 {
		t.Fatalf("discard: %+v, %v", ch, err)
	}
	if ch, err := st.Discard(ctx, added[0], "bob", "again", false); err != nil || ch.Changed {
		t.Fatalf("second discard: %+v, %v; want a no-op", ch, err)
	}
	if _, err := st.Retry(ctx, "00000000-0000-0000-0000-000000000000", "bob", "", false); !errors.Is(err, mysql.ErrEventNotFound) {
		t.Errorf("retry of an unknown id: %v, want ErrEventNotFound", err)
	}
	var actor, reason, action string
	if err := d.DB.QueryRow("SELECT actor, reason, action FROM outbox_audit WHERE event_id = ?", added[0]).
		Scan(&actor, &reason, &action); err != nil {
		t.Fatal(err)
	}
	if actor != "bob" || action != mysql.AuditDiscard || !strings.Contains(reason, "obsolete") {
		t.Errorf("audit row: %s %s %q", actor, action, reason)
	}
	// The successor no longer waits: a discarded event counts as done.
	c := claim(t, st, "relay-b", 100, time.Minute)
	if len(c.Events) != 1 || c.Events[0].ID != added[1] {
		t.Fatalf("after discard claimed %v, want %s", ids(c.Events), added[1])
	}
	if q, _ := st.ListQuarantined(ctx, mysql.QuarantineFilter{}); len(q) != 0 {
		t.Errorf("a discarded event is still listed as quarantined: %+v", q)
	}
}

// TestCleanupDeletesOnlyPublishedPastRetention: with published-old,
// published-new, unpublished-old and quarantined-old rows, cleanup deletes
// exactly the first group, in batches no larger than the batch size.
func TestCleanupDeletesOnlyPublishedPastRetention(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	ctx := context.Background()

	group := func(n int, prefix string) []string {
		aggs := make([]string, n)
		for i := range aggs {
			aggs[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return testenv.AddEvents(t, d.DB, testenv.OrderEvents(aggs...)...)
	}
	publishedOld := group(23, "po")
	publishedNew := group(5, "pn")
	unpublishedOld := group(4, "uo")
	quarantinedOld := group(3, "qo")
	exec := func(q string, ids []string) {
		t.Helper()
		if _, err := d.DB.Exec(fmt.Sprintf(q, "'"+strings.Join(ids, "','")+"'")); err != nil {
			t.Fatal(err)
		}
	}
	exec("UPDATE outbox_events SET published_at = NOW(6) - INTERVAL 10 DAY, occurred_at = NOW(6) - INTERVAL 10 DAY WHERE id IN (%s)", publishedOld)
	exec("UPDATE outbox_events SET published_at = NOW(6) - INTERVAL 1 HOUR WHERE id IN (%s)", publishedNew)
	exec("UPDATE outbox_events SET occurred_at = NOW(6) - INTERVAL 10 DAY, next_attempt_at = NOW(6) - INTERVAL 10 DAY WHERE id IN (%s)", unpublishedOld)
	exec("UPDATE outbox_events SET occurred_at = NOW(6) - INTERVAL 10 DAY, quarantined_at = NOW(6) - INTERVAL 10 DAY, next_attempt_at = '9999-12-31' WHERE id IN (%s)", quarantinedOld)

	// Inbox rows: 7 older than the inbox retention, 2 younger.
	for i := range 9 {
		age := "40 DAY"
		if i >= 7 {
			age = "1 DAY"
		}
		if _, err := d.DB.Exec("INSERT INTO consumed_events VALUES ('inventory', ?, NOW(6) - INTERVAL "+age+")",
			fmt.Sprintf("00000000-0000-0000-0000-%012d", i)); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := st.Cleanup(ctx, store.CleanupRequest{Retention: 7 * 24 * time.Hour, InboxRetention: 24 * time.Hour, BatchSize: 5}); err == nil {
		t.Fatal("an inbox retention shorter than the replay window was accepted")
	}
	rep, err := st.Cleanup(ctx, store.CleanupRequest{Retention: 7 * 24 * time.Hour, InboxRetention: 30 * 24 * time.Hour, BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != int64(len(publishedOld)) {
		t.Errorf("deleted %d events, want %d", rep.Events, len(publishedOld))
	}
	if rep.Inbox != 7 {
		t.Errorf("deleted %d inbox rows, want the 7 past the inbox retention", rep.Inbox)
	}
	if rep.LargestBatch > 5 || rep.Batches < 5 {
		t.Errorf("%d batches, largest %d: want batches of at most 5", rep.Batches, rep.LargestBatch)
	}
	for name, group := range map[string][]string{"published-new": publishedNew, "unpublished-old": unpublishedOld, "quarantined-old": quarantinedOld} {
		var n int
		d.DB.QueryRow("SELECT COUNT(*) FROM outbox_events WHERE id IN ('" + strings.Join(group, "','") + "')").Scan(&n)
		if n != len(group) {
			t.Errorf("%s: %d of %d rows left", name, n, len(group))
		}
	}
	var left int
	d.DB.QueryRow("SELECT COUNT(*) FROM outbox_events WHERE id IN ('" + strings.Join(publishedOld, "','") + "')").Scan(&left)
	if left != 0 {
		t.Errorf("%d published-old rows survived", left)
	}
}

func TestReadBacklogCountsEachState(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	ctx := context.Background()
	// p: head quarantined, one held behind it; r: one failure backing off;
	// s: one published; then three ready events and one leased.
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p", "p", "r", "s")...)
	c := claim(t, st, "relay-a", 100, time.Minute)
	if len(c.Events) != 4 {
		t.Fatalf("claimed %d, want 4", len(c.Events))
	}
	if _, err := st.Settle(ctx, c.Lease, store.Outcome{
		Published: []string{added[3]},
		Failed: []store.Failure{
			{EventID: added[0], Class: "too_large", Message: "too large", Quarantine: true},
			{EventID: added[2], Class: "timeout", Message: "timeout", RetryAfter: time.Hour},
		},
		Unsent: []store.Unsent{{EventID: added[1], Behind: added[0]}},
	}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	testenv.AddEvents(t, d.DB, testenv.OrderEvents("t1", "t2", "t3", "u")...)
	if lc := claim(t, st, "relay-b", 1, time.Minute); len(lc.Events) != 1 {
		t.Fatalf("second claim took %d, want 1", len(lc.Events))
	}

	b, err := st.ReadBacklog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := mysql.Backlog{Ready: 3, Leased: 1, BackingOff: 1, Held: 1, Quarantined: 1, HeldAggregates: 1, PublishedLastHour: 1}
	got := b
	got.FailuresLastHour, got.OldestReadyAge, got.OldestParkedAge, got.OldestQuarantinedAge = nil, 0, 0, 0
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backlog\n got %+v\nwant %+v", got, want)
	}
	if b.FailuresLastHour["too_large"] != 1 || b.FailuresLastHour["timeout"] != 1 {
		t.Errorf("failures last hour: %v", b.FailuresLastHour)
	}
	if b.OldestParkedAge <= 0 || b.OldestQuarantinedAge <= 0 {
		t.Errorf("oldest parked %v, quarantined %v: want positive ages", b.OldestParkedAge, b.OldestQuarantinedAge)
	}
}
