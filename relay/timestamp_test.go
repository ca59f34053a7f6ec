package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestOldEventsArePublished: events that occurred long before the relay
// saw them (a backlog left by a relay outage, a replay) are published like
// fresh ones. franz-go measures its delivery timeout from the record's
// Timestamp, so a record stamped with an hour-old occurred_at would time
// out before it was ever sent, on every attempt, until quarantined.
func TestOldEventsArePublished(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	var events []outbox.Event
	for i := range 60 {
		ev := event(aggName(i%6), i)
		ev.OccurredAt = time.Now().Add(-time.Hour)
		events = append(events, ev)
	}
	if _, err := e.write(context.Background(), true, events...); err != nil {
		t.Fatal(err)
	}
	// A 3s lease gives the relay's producer a 2s delivery timeout.
	p := e.relay(t, testenv.RelayOptions{Name: "relay-old", Lease: 3 * time.Second})
	e.waitDrained(t, 30*time.Second)
	stop(t, p)
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE attempts > 1"); n > 0 {
		t.Errorf("%d events needed more than one attempt", n)
	}
	e.verifyTopic(t, func(verify.Row) bool { return true }, nil)
}
