package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestStaleRelayCannotMarkAfterTakeover: relay "stale" (2s lease) claims a
// batch and publishes it, then stalls 8s between Kafka's acknowledgement
// and its mark (relay.after_ack_before_mark=sleep(8s)), far past its lease.
// Relay "fresh" takes its buckets over and publishes the batch again. The
// stale relay's settlement is fenced off: it logs the lost buckets, nothing
// is lost and the order holds; every event reaches the topic twice (at
// least once, not exactly once).
func TestStaleRelayCannotMarkAfterTakeover(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
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
	stale.WaitForMetric(t, "herald_relay_publish_attempts_total", 30*time.Second, "the batch produced",
		func(v float64) bool { return v == events })

	fresh := e.relay(t, testenv.RelayOptions{Name: "fresh", Lease: 30 * time.Second})
	testenv.WaitFor(t, 30*time.Second, "fresh relay takes over and publishes", func() (bool, string) {
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NOT NULL")
		return n == events, fmt.Sprintf("%d of %d published", n, events)
	})
	if n, err := fresh.Metric("herald_relay_bucket_takeovers_total"); err != nil || n == 0 {
		t.Errorf("fresh reports %v bucket takeovers (%v), want the stale relay's buckets", n, err)
	}
	stale.WaitForLog(t, "buckets taken over before the batch was settled", 30*time.Second)
	stale.WaitForLog(t, fmt.Sprintf(`"events":%d`, events), time.Second)
	stop(t, stale, fresh)

	report := e.verifyTopic(t, nil, nil)
	if report.Duplicates != events {
		t.Errorf("%d duplicates, want %d: each event published once by each relay", report.Duplicates, events)
	}
}
