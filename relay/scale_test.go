package relay_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestRelaysJoinAndLeaveDuringADrain: three relay processes drain 20,000
// events while a writer adds more; midway a fourth relay joins, one is
// SIGKILLed and one stops with SIGTERM. The buckets move to the live relays
// (the stopped one frees its own at once, the killed one's are taken over
// after its lease), kcat finds every committed event, none rolled back and
// every aggregate in order, and in the end only live relays own buckets.
func TestRelaysJoinAndLeaveDuringADrain(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	const (
		backlog    = 20_000
		aggregates = 500
		live       = 6_000 // the writer keeps going while the membership changes
		lease      = 3 * time.Second
	)
	e := newEnv(t, testenv.TopicOptions{Partitions: 12})
	e.preload(t, backlog, aggregates)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	relays := map[string]*testenv.Process{}
	start := func(name string) {
		relays[name] = e.relay(t, testenv.RelayOptions{Name: name, Lease: lease, BatchSize: 200})
	}
	for _, name := range []string{"relay-a", "relay-b", "relay-c"} {
		start(name)
	}
	lw := e.startLiveWriter(ctx, aggregates, live)
	unpublished := func() int { return e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL") }
	owners := func() map[string]int {
		rows, err := e.db.DB.Query("SELECT owner, COUNT(*) FROM outbox_buckets WHERE owner IS NOT NULL GROUP BY owner")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var owner string
			var n int
			if err := rows.Scan(&owner, &n); err != nil {
				t.Fatal(err)
			}
			out[owner] = n
		}
		return out
	}

	testenv.WaitFor(t, time.Minute, "the three relays share the buckets", func() (bool, string) {
		o := owners()
		return len(o) == 3 && o["relay-a"]+o["relay-b"]+o["relay-c"] == 64, fmt.Sprint(o)
	})
	start("relay-d")
	// Every relay must hold its quarter before relay-b is killed: a relay
	// that just released buckets it should no longer own may hold none for
	// a turn, and a relay killed holding nothing leaves nothing to take over.
	testenv.WaitFor(t, time.Minute, "the four relays own 16 buckets each", func() (bool, string) {
		o := owners()
		return len(o) == 4 && o["relay-a"] == 16 && o["relay-b"] == 16 && o["relay-c"] == 16 && o["relay-d"] == 16, fmt.Sprint(o)
	})
	select {
	case <-lw.done:
		t.Fatal("the writer finished before the membership changed: the drain proves less than it should")
	default:
	}
	remaining := unpublished()
	relays["relay-b"].Kill(t)
	if err := relays["relay-c"].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit := relays["relay-c"].Wait(t, 30*time.Second); exit.Code != 0 {
		t.Fatalf("relay-c after SIGTERM: %v\n%s", exit, relays["relay-c"].Tail(10))
	}
	testenv.WaitFor(t, 2*time.Minute, "relay-a and relay-d drain everything", func() (bool, string) {
		select {
		case <-lw.done:
		default:
			return false, "writer still writing"
		}
		n := unpublished()
		return n == 0, fmt.Sprintf("%d unpublished, buckets %v", n, owners())
	})
	committed, rolledBack := lw.wait(t)
	testenv.WaitFor(t, 30*time.Second, "only the live relays own buckets", func() (bool, string) {
		o := owners()
		return len(o) == 2 && o["relay-a"]+o["relay-d"] == 64, fmt.Sprint(o)
	})
	takeovers := 0.0
	for _, name := range []string{"relay-a", "relay-d"} {
		n, err := relays[name].Metric("herald_relay_bucket_takeovers_total")
		if err != nil {
			t.Fatal(err)
		}
		takeovers += n
	}
	if takeovers == 0 {
		t.Error("nobody took relay-b's buckets over: they should have gone to a live relay once its lease ended")
	}
	stop(t, relays["relay-a"], relays["relay-d"])
	t.Logf("%d + %d events; %d unpublished and the writer still writing when relay-b was killed and relay-c stopped",
		backlog, committed, remaining)
	e.verifyTopic(t, nil, rolledBack)
}

// TestHotAggregateDoesNotStarveOthers: one aggregate with 3,000 ready
// events written before 1,000 quiet aggregates' single events. Its events
// go out one at a time (at most one record per aggregate in flight), so
// draining it takes a while; the quiet aggregates must not wait for it:
// they are all published while the hot aggregate still has most of its
// events to go, and the hot aggregate is published in order.
func TestHotAggregateDoesNotStarveOthers(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	const hot, quiet = 3_000, 1_000
	e := newEnv(t, testenv.TopicOptions{Partitions: 12})
	ctx := context.Background()
	for start := 0; start < hot; start += 1000 {
		var batch []outbox.Event
		for i := start; i < start+1000; i++ {
			batch = append(batch, event("hot", i))
		}
		if _, err := e.write(ctx, true, batch...); err != nil {
			t.Fatal(err)
		}
	}
	var batch []outbox.Event
	for i := range quiet {
		batch = append(batch, event(aggName(i), i))
	}
	if _, err := e.write(ctx, true, batch...); err != nil {
		t.Fatal(err)
	}

	p := e.relay(t, testenv.RelayOptions{Name: "relay-hot"})
	var hotLeft int
	testenv.WaitFor(t, time.Minute, "the quiet aggregates published", func() (bool, string) {
		q := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id <> 'hot' AND published_at IS NULL")
		hotLeft = e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = 'hot' AND published_at IS NULL")
		return q == 0, fmt.Sprintf("%d quiet and %d hot events unpublished", q, hotLeft)
	})
	t.Logf("every quiet aggregate published with %d of %d hot events still to go", hotLeft, hot)
	if hotLeft < hot/2 {
		t.Errorf("the quiet aggregates were published only after %d of %d hot events: they waited behind it", hot-hotLeft, hot)
	}
	testenv.WaitFor(t, 5*time.Minute, "the hot aggregate drained", func() (bool, string) {
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL")
		return n == 0, fmt.Sprintf("%d unpublished", n)
	})
	stop(t, p)
	e.verifyTopic(t, nil, nil)
}
