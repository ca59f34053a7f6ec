package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/outbox"
)

// TestStaleRelayCannotMarkAfterTakeover: relay "stale" (2s lease) claims a
// batch and publishes it, then stalls 8s between Kafka's acknowledgement
// and its mark (relay.after_ack_before_mark=sleep(8s)), far past its lease.
// Relay "fresh" takes the batch over and publishes it. The stale relay's
// mark is fenced off: the rows stay marked under the fresh relay's lease,
// the stale relay logs the lost lease, nothing is lost and the order
// holds; every event reaches the topic twice (at least once, not exactly
// once).
func TestStaleRelayCannotMarkAfterTakeover(t *testing.T) {
	testenv.OnEachServer(t, testStaleRelayCannotMarkAfterTakeover)
}

func testStaleRelayCannotMarkAfterTakeover(t *testing.T, server testenv.Server) {
	const events = 60
	e := newEnvOn(t, server, testenv.TopicOptions{Partitions: 3})
	var batch []outbox.Event
	for i := range events {
		batch = append(batch, event(aggName(i%12), i))
	}
	if _, err := e.write(context.Background(), true, batch...); err != nil {
		t.Fatal(err)
	}

	stale := e.relay(t, testenv.RelayOptions{Name: "stale", Lease: 2 * time.Second,
		Failpoints: "relay.after_ack_before_mark=sleep(8s)"})
	testenv.WaitFor(t, 30*time.Second, "stale relay claims the batch", func() (bool, string) {
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE locked_by = 'stale'")
		return n == events, fmt.Sprintf("%d of %d leased by stale", n, events)
	})

	fresh := e.relay(t, testenv.RelayOptions{Name: "fresh", Lease: 30 * time.Second})
	testenv.WaitFor(t, 30*time.Second, "fresh relay takes over and publishes", func() (bool, string) {
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE locked_by = 'fresh' AND published_at IS NOT NULL")
		return n == events, fmt.Sprintf("%d of %d published by fresh", n, events)
	})

	stale.WaitForLog(t, "lease taken over before the batch was settled", 30*time.Second)
	stale.WaitForLog(t, fmt.Sprintf(`"events":%d`, events), time.Second)
	stop(t, stale, fresh)

	// The stale mark matched nothing: every row still carries the fresh
	// lease, claimed twice.
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE locked_by = 'fresh' AND attempts = 2 AND published_at IS NOT NULL"); n != events {
		t.Errorf("%d of %d rows published under fresh's lease after 2 attempts", n, events)
	}
	report := e.verifyTopic(t, nil, nil)
	if report.Duplicates != events {
		t.Errorf("%d duplicates, want %d: each event published once by each relay", report.Duplicates, events)
	}
}
