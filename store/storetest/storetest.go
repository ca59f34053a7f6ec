package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
)

// Harness is one fresh database with herald's schema, and the few hooks
// the suite needs that no store operation offers.
type Harness struct {
	// Store is on the fresh database.
	Store *store.Store
	// Backdate moves the given events' times d into the past: occurred_at,
	// published_at, quarantined_at, locked_at, and next_attempt_at unless
	// it is the dialect's "never"; and failed_at of their failure records.
	Backdate func(t testing.TB, d time.Duration, eventIDs ...string)
	// BackdateConsumed moves consumed_at of a consumer's inbox rows d into
	// the past.
	BackdateConsumed func(t testing.TB, d time.Duration, consumer string, eventIDs ...string)
	// OpenInZone opens another pool on the same database whose sessions
	// use timeZone (a UTC offset such as "+08:00", or a zone name), as a
	// service's own pool might; the suite closes it.
	OpenInZone func(t testing.TB, timeZone string) *sql.DB
	// InsertRaw inserts row into outbox_events with plain SQL, ready at
	// once, as a writer other than outbox.Writer (another language) would,
	// and returns the database's error (nil when it took the row).
	InsertRaw func(t testing.TB, row RawRow) error
	// DropTrigger drops the table's trigger (migration 6), as on a table
	// migrated before it: rows a foreign writer got wrong then go in as
	// they are (with it, the database refuses them), and outbox.Writer's
	// rows are no longer numbered.
	DropTrigger func(t testing.TB)
}

// RawRow is an outbox row as a foreign writer inserts it: the values as
// given, nothing checked by herald.
type RawRow struct {
	ID            string
	AggregateType string
	AggregateID   string
	AggregateSeq  int64
	EventType     string
	SchemaVersion int64
	Payload       []byte
	// Headers is the headers column's text; nil is NULL.
	Headers []byte
	// ChecksOff inserts with the table's CHECK constraints off where a
	// session may turn them off (MariaDB's check_constraint_checks = 0,
	// which lets JSON columns take any text); elsewhere the row is
	// inserted as usual.
	ChecksOff bool
}

// NewHarness makes a Harness on a fresh database for one test.
type NewHarness func(t testing.TB) Harness

// Run runs every conformance test, in parallel, each on its own database.
func Run(t *testing.T, newHarness NewHarness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"ClaimWritesNothing", testClaimWritesNothing},
		{"RelaysOwnDisjointBuckets", testRelaysOwnDisjointBuckets},
		{"MembershipChanges", testMembershipChanges},
		{"TakeoverIsFenced", testTakeoverIsFenced},
		{"ReadyPredecessorOutsideTheWindow", testReadyPredecessorOutsideTheWindow},
		{"HotAggregateDoesNotFillTheBatch", testHotAggregateDoesNotFillTheBatch},
		{"ClaimsContinueAfterTheirCursor", testClaimsContinueAfterTheirCursor},
		{"OneStreamer", testOneStreamer},
		{"StreamPlansAndHandsOver", testStreamPlansAndHandsOver},
		{"StreamPublishesWithoutWriting", testStreamPublishesWithoutWriting},
		{"WatermarkSampleWaitsForOpenTransactions", testWatermarkSampleWaitsForOpenTransactions},
		{"ConcurrentRelaysDrainInOrder", testConcurrentRelaysDrainInOrder},
		{"FailureBacksOffQuarantinesAndScrubs", testFailureBacksOffQuarantinesAndScrubs},
		{"SuccessorsWaitBehindABackoff", testSuccessorsWaitBehindBackoff},
		{"OrderPolicies", testOrderPolicies},
		{"ShutdownReleaseGivesTheAttemptBack", testShutdownRelease},
		{"ConfigurationFailureChargesNothing", testConfigurationRelease},
		{"QuarantineRetryReleasesHeldEventsInOrder", testQuarantineRetry},
		{"DiscardNeedsReasonAndIsAudited", testDiscard},
		{"QuarantineListFilters", testQuarantineListFilters},
		{"BacklogCountsEachState", testBacklog},
		{"BacklogAgesCountFromCreation", testBacklogAgesCountFromCreation},
		{"SearchEventsPagesByKeyset", testSearchEvents},
		{"AggregateTimelineMarksItsHead", testAggregateTimeline},
		{"AuditLogPages", testAuditLogPages},
		{"ListReplays", testListReplays},
		{"QuarantineListPagesAfterACursor", testQuarantineListPages},
		{"DeliveryDelayByQuantile", testDeliveryDelay},
		{"CleanupDeletesOnlyPublishedPastRetention", testCleanup},
		{"ReplayPagesInAggregateOrder", testReplayPages},
		{"ReplayCheckpoints", testReplayCheckpoints},
		{"WriterCommitsWithTheTransaction", testWriterCommitsWithTheTransaction},
		{"WriterNumbersEventsPerAggregate", testWriterNumbers},
		{"ConcurrentWritersOfOneAggregate", testConcurrentWriters},
		{"WriterChunksLargeBatches", testWriterChunks},
		{"WriterIgnoresTheSessionTimeZone", testWriterTimeZone},
		{"RowsForeignWritersGotWrong", testRowsForeignWritersGotWrong},
		{"InboxRecordsDuplicates", testInboxDuplicates},
		{"DeadlockIsTransient", testDeadlockIsTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newHarness(t))
		})
	}
}

// The helpers below are the suite's vocabulary.

var ctx = context.Background()

// orderEvents returns one order.created event per aggregate id.
func orderEvents(aggregateIDs ...string) []outbox.Event {
	events := make([]outbox.Event, len(aggregateIDs))
	for i, id := range aggregateIDs {
		events[i] = outbox.Event{AggregateType: "order", AggregateID: id, EventType: "order.created",
			SchemaVersion: 1, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	return events
}

// add commits events in one transaction and returns their ids.
func (h Harness) add(t testing.TB, events ...outbox.Event) []string {
	t.Helper()
	return h.addOn(t, h.Store.DB(), events...)
}

// addOn is add on another pool of the same database.
func (h Harness) addOn(t testing.TB, db *sql.DB, events ...outbox.Event) []string {
	t.Helper()
	w := h.writer(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ids, err := w.Add(ctx, tx, events...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func (h Harness) writer(t testing.TB) *outbox.Writer {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Dialect: h.Store.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// testRelay is a relay of the suite: its ownership and its memory of done
// events, as relay.Relay keeps them.
type testRelay struct {
	h     Harness
	id    string
	lease time.Duration
	own   store.Ownership
	known *store.Known
}

// join makes relayID a member and takes its turn at the bucket table; a
// relay that joins alone owns every bucket.
func (h Harness) join(t testing.TB, relayID string, lease time.Duration) *testRelay {
	t.Helper()
	r := &testRelay{h: h, id: relayID, lease: lease, known: store.NewKnown()}
	r.rebalance(t)
	return r
}

func (r *testRelay) rebalance(t testing.TB) store.Rebalance {
	t.Helper()
	rb, err := r.h.Store.Rebalance(ctx, store.RebalanceRequest{RelayID: r.id, Lease: r.lease})
	if err != nil {
		t.Fatalf("rebalance of %s: %v", r.id, err)
	}
	r.own = rb.Ownership
	return rb
}

func (r *testRelay) claim(t testing.TB, limit int) store.Claim {
	t.Helper()
	return r.claimWith(t, limit, store.OrderHold)
}

func (r *testRelay) claimWith(t testing.TB, limit int, policy store.OrderPolicy) store.Claim {
	t.Helper()
	c, err := r.h.Store.Claim(ctx, store.ClaimRequest{Ownership: r.own, Limit: limit, Policy: policy, Known: r.known})
	if err != nil {
		t.Fatalf("claim by %s: %v", r.id, err)
	}
	return c
}

func (r *testRelay) settle(t testing.TB, c store.Claim, out store.Outcome) store.Settled {
	t.Helper()
	res, err := r.h.Store.Settle(ctx, c, out, store.OrderHold)
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	return res
}

func (h Harness) show(t testing.TB, id string) store.EventDetail {
	t.Helper()
	d, err := h.Store.ShowEvent(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (h Harness) now(t testing.TB) time.Time {
	t.Helper()
	now, err := h.Store.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return now
}

func (h Harness) backlog(t testing.TB) store.Backlog {
	t.Helper()
	b, err := h.Store.ReadBacklog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// quarantine claims everything and quarantines the events poison, giving
// back the other claimed events of their aggregates (held behind them) and
// publishing the rest.
func (r *testRelay) quarantine(t testing.TB, poison ...string) {
	t.Helper()
	c := r.claim(t, 100)
	heads := map[string]store.Event{} // aggregate id -> its poisoned event
	for _, e := range c.Events {
		for _, id := range poison {
			if e.ID == id {
				heads[e.AggregateID] = e
			}
		}
	}
	if len(heads) != len(poison) {
		t.Fatalf("claimed %v, which lacks some of %v", ids(c.Events), poison)
	}
	var out store.Outcome
	for _, e := range c.Events {
		head, ok := heads[e.AggregateID]
		switch {
		case ok && e.ID == head.ID:
			out.Failed = append(out.Failed, store.Failure{EventID: e.ID, Class: "too_large", Message: "MESSAGE_TOO_LARGE", Quarantine: true})
		case ok && e.AggregateSeq > head.AggregateSeq:
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Behind: head.ID})
		default:
			out.Published = append(out.Published, e.ID)
		}
	}
	r.settle(t, c, out)
}

func ids(events []store.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}
