package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestThreeRelaysDrainWhileWriting: three `herald relay` processes drain a
// backlog of 20,000 events over 500 aggregates while a writer keeps adding
// events to the same aggregates, a quarter of its transactions rolled
// back. kcat then finds every committed event on the topic, no event of a
// rolled-back transaction, and every aggregate's first copies in
// aggregate_seq order.
func TestThreeRelaysDrainWhileWriting(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	const (
		backlog    = 20_000
		aggregates = 500
		live       = 1_000 // committed by the writer during the drain
	)
	e := newEnv(t, testenv.TopicOptions{Partitions: 12})
	e.preload(t, backlog, aggregates)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var relays []*testenv.Process
	for i := range 3 {
		relays = append(relays, e.relay(t, testenv.RelayOptions{Name: fmt.Sprintf("relay-%d", i), Lease: 10 * time.Second}))
	}
	lw := e.startLiveWriter(ctx, aggregates, live)

	writerDoneAt := time.Duration(0)
	testenv.WaitFor(t, 2*time.Minute, "drain", func() (bool, string) {
		select {
		case <-lw.done:
			if writerDoneAt == 0 {
				writerDoneAt = time.Since(start)
			}
		default:
		}
		for _, p := range relays {
			if p.Exited() {
				t.Fatalf("%s exited: %v\n%s", p.Name, p.Exit(), p.Tail(20))
			}
		}
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL")
		return writerDoneAt > 0 && n == 0, fmt.Sprintf("%d unpublished", n)
	})
	committed, rolledBack := lw.wait(t)
	drained := time.Since(start)
	t.Logf("%d + %d events published by 3 relays in %v (writer done after %v; %d events rolled back)",
		backlog, committed, drained.Round(time.Millisecond), writerDoneAt.Round(time.Millisecond), len(rolledBack))
	// Every relay took part: the drain was shared, not serialized.
	for _, p := range relays {
		n, err := p.Metric("herald_relay_published_total")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s published %v events", p.Name, n)
		if n == 0 {
			t.Errorf("%s published nothing", p.Name)
		}
	}
	stop(t, relays...)

	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events"); n != backlog+committed {
		t.Errorf("outbox holds %d events, want %d committed", n, backlog+committed)
	}
	e.verifyTopic(t, nil, rolledBack)
}
