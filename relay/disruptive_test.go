//go:build disruptive

package relay_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDisruptiveKafkaOutage stops every Kafka broker for 30 seconds while
// relays, one on each database server, have events to publish (run alone:
// `make test` runs it in a serial phase; it breaks every other test using
// Kafka meanwhile). The events back off — attempts > 0, error_class
// timeout or broker_unavailable, last_error set — and none is quarantined
// for a transient outage; once the brokers are back every event arrives,
// in order, as kcat confirms. Both servers' relays live through the same
// outage.
func TestDisruptiveKafkaOutage(t *testing.T) {
	servers := []testenv.Server{testenv.MariaDB, testenv.PostgreSQL}
	o := startOutage(t, len(servers), 30*time.Second)
	for _, server := range servers {
		t.Run(string(server), func(t *testing.T) {
			t.Parallel()
			testKafkaOutage(t, server, o)
		})
	}
}

// outage stops every Kafka broker once each of its participants is ready
// (or has failed), for its duration, and starts them again.
type outage struct {
	ready    chan struct{} // one send per participant set up
	down, up chan struct{} // closed when the brokers were stopped, started
	duration time.Duration
	downAt   time.Time
	nodes    []string
	startErr error
}

// startOutage runs the outage of n participants in the background; the
// brokers are running again when t ends, whatever happened.
func startOutage(t *testing.T, n int, duration time.Duration) *outage {
	t.Helper()
	root := testenv.RepoRoot(t)
	o := &outage{ready: make(chan struct{}, n), down: make(chan struct{}), up: make(chan struct{}), duration: duration,
		nodes: brokerNodes(t, testenv.KafkaBrokers(t))}
	t.Logf("broker nodes: %v", o.nodes)
	done := make(chan struct{})
	t.Cleanup(func() {
		<-done
		if err := stackNodes(root, "start", o.nodes); err != nil {
			t.Errorf("restart brokers: %v", err)
		}
	})
	go func() {
		defer close(done)
		deadline := time.After(5 * time.Minute) // a participant failed before it was ready
		for range n {
			select {
			case <-o.ready:
			case <-deadline:
			}
		}
		if err := stackNodes(root, "stop", o.nodes); err != nil {
			o.startErr = fmt.Errorf("stop brokers: %w", err)
		}
		o.downAt = time.Now()
		close(o.down)
		<-time.After(o.duration) // the outage itself

		if err := stackNodes(root, "start", o.nodes); err != nil && o.startErr == nil {
			o.startErr = fmt.Errorf("start brokers: %w", err)
		}
		close(o.up)
	}()
	return o
}

func testKafkaOutage(t *testing.T, server testenv.Server, o *outage) {
	e := newEnvOn(t, server, testenv.TopicOptions{Partitions: 12})
	e.preload(t, 300, 30)
	// A 6s lease gives the producer a 4s delivery timeout; the 5s backoff
	// cap keeps the retries after the outage close together.
	p := e.relay(t, testenv.RelayOptions{Name: "relay-outage", Lease: 6 * time.Second, BatchSize: 100,
		Env: []string{"HERALD_BACKOFF_CAP=5s"}})
	e.waitDrained(t, time.Minute)
	o.ready <- struct{}{}
	<-o.down
	if o.startErr != nil {
		t.Fatal(o.startErr)
	}
	t.Logf("all brokers stopped")

	var during []outbox.Event
	for i := range 300 {
		during = append(during, event(aggName(i%30), 1000+i))
	}
	if _, err := e.write(context.Background(), true, during...); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, o.duration, "publication failures recorded", func() (bool, string) {
		n := e.db.Count(t, `SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL AND attempts > 0
			AND error_class IN ('timeout', 'broker_unavailable') AND last_error <> ''`)
		return n > 0, "no failed attempt recorded yet"
	})
	// The rest of the outage, watched: a transient outage quarantines nothing.
	testenv.WaitFor(t, o.duration+time.Minute, "the end of the outage", func() (bool, string) {
		if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
			t.Fatalf("%d events quarantined %v into a transient outage", n, time.Since(o.downAt).Round(time.Second))
		}
		select {
		case <-o.up:
			return true, ""
		default:
			return false, ""
		}
	})
	if o.startErr != nil {
		t.Fatal(o.startErr)
	}
	up := time.Now()
	var maxAttempts int
	var sample string
	if err := e.db.DB.QueryRow(`SELECT MAX(attempts), MAX(last_error)
		FROM outbox_events WHERE published_at IS NULL AND error_class <> 'held'`).Scan(&maxAttempts, &sample); err != nil {
		t.Fatal(err)
	}
	classes := e.db.Strings(t, `SELECT DISTINCT error_class FROM outbox_events WHERE published_at IS NULL AND error_class <> 'held'`)
	t.Logf("after %v down: up to %d attempts, classes %s, e.g. last_error %q", up.Sub(o.downAt).Round(time.Second), maxAttempts, classes, sample)
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
		t.Errorf("%d events quarantined during a transient outage", n)
	}
	waitForMetadata(t, e, len(o.nodes))
	t.Logf("brokers back; metadata complete %v after restart", time.Since(up).Round(time.Millisecond))

	e.waitDrained(t, 2*time.Minute)
	t.Logf("all events published %v after the brokers were back", time.Since(up).Round(time.Millisecond))
	if p.Exited() {
		t.Fatalf("relay exited during the outage: %v", p.Exit())
	}
	stop(t, p)
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
		t.Errorf("%d events quarantined for a transient outage", n)
	}
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_failures WHERE error_class IN ('timeout', 'broker_unavailable')"); n == 0 {
		t.Error("the failure log holds no timeout or broker_unavailable attempt")
	}
	e.verifyTopic(t, nil, nil)
}

// brokerNodes names the stack nodes serving the brokers (kafka-ID): all of
// them, whether they are broker-only (three-broker layout, the controller
// is node 100 and keeps running) or combined broker+controller (one-broker
// layout, node 1).
func brokerNodes(t *testing.T, brokers []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	meta, err := testenv.NewAdmin(t, brokers).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, b := range meta.Brokers {
		nodes = append(nodes, fmt.Sprintf("kafka-%d", b.NodeID))
	}
	sort.Strings(nodes)
	return nodes
}

// stackNodes runs stack/node.sh ACTION on every node at once.
func stackNodes(root, action string, nodes []string) error {
	script := filepath.Join(root, "stack", "node.sh")
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, script, action, n).CombinedOutput()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node.sh %s %s: %v\n%s", action, n, err, out))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitForMetadata waits until every broker is back and every partition of
// the test's topic has a leader.
func waitForMetadata(t *testing.T, e *env, brokers int) {
	t.Helper()
	admin := testenv.NewAdmin(t, e.brokers)
	testenv.WaitFor(t, 2*time.Minute, "cluster metadata", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		meta, err := admin.Metadata(ctx, e.topic)
		if err != nil {
			return false, err.Error()
		}
		if len(meta.Brokers) < brokers {
			return false, fmt.Sprintf("%d of %d brokers", len(meta.Brokers), brokers)
		}
		td, ok := meta.Topics[e.topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false, fmt.Sprintf("topic %s: %v", e.topic, td.Err)
		}
		var leaderless []string
		for _, pd := range td.Partitions {
			if pd.Err != nil || pd.Leader < 0 {
				leaderless = append(leaderless, fmt.Sprint(pd.Partition))
			}
		}
		return len(leaderless) == 0, "partitions without a leader: " + strings.Join(leaderless, ",")
	})
}

// TestDisruptiveStreamRidesOutages: a binlog relay streams while, in turn,
// MariaDB restarts and every Kafka broker stops for 30 seconds. Events
// written before, between and after arrive in order; during the Kafka
// outage nothing is quarantined (the stream's batches back off and go to
// the polling path); after MariaDB's restart the stream goes on from its
// position.
func TestDisruptiveStreamRidesOutages(t *testing.T) {
	const outage = 30 * time.Second
	e := newEnv(t, testenv.TopicOptions{Partitions: 6})
	nodes := brokerNodes(t, e.brokers)
	root := testenv.RepoRoot(t)
	p := e.relay(t, testenv.RelayOptions{Name: "streamer", Lease: 6 * time.Second,
		Env: []string{"HERALD_SOURCE=binlog", "HERALD_BACKOFF_CAP=5s"}})
	p.WaitForLog(t, "streaming", time.Minute)
	write := func(n, base int) {
		t.Helper()
		var batch []outbox.Event
		for i := range n {
			batch = append(batch, event(aggName(i%30), base+i))
		}
		if _, err := e.write(context.Background(), true, batch...); err != nil {
			t.Fatal(err)
		}
	}
	write(300, 0)
	e.waitDrained(t, time.Minute)

	t.Cleanup(func() {
		// Whatever happened, leave the servers running.
		if err := stackNodes(root, "start", append([]string{"mariadb"}, nodes...)); err != nil {
			t.Errorf("restart servers: %v", err)
		}
	})
	if err := stackNodes(root, "stop", []string{"mariadb"}); err != nil {
		t.Fatalf("stop mariadb: %v", err)
	}
	if err := stackNodes(root, "start", []string{"mariadb"}); err != nil {
		t.Fatalf("start mariadb: %v", err)
	}
	testenv.WaitFor(t, time.Minute, "MariaDB answers", func() (bool, string) {
		err := e.db.DB.Ping()
		return err == nil, fmt.Sprint(err)
	})
	write(300, 1000)
	e.waitDrained(t, 2*time.Minute)
	t.Log("after MariaDB's restart: every event published")

	if err := stackNodes(root, "stop", nodes); err != nil {
		t.Fatalf("stop brokers: %v", err)
	}
	down := time.Now()
	write(300, 2000)
	testenv.WaitFor(t, outage+time.Minute, "the end of the outage", func() (bool, string) {
		if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
			t.Fatalf("%d events quarantined %v into a transient outage", n, time.Since(down).Round(time.Second))
		}
		return time.Since(down) >= outage, ""
	})
	if err := stackNodes(root, "start", nodes); err != nil {
		t.Fatalf("start brokers: %v", err)
	}
	waitForMetadata(t, e, len(nodes))
	e.waitDrained(t, 2*time.Minute)
	if p.Exited() {
		t.Fatalf("the relay exited: %v\n%s", p.Exit(), p.Tail(20))
	}
	streamed, err := p.Metric("herald_relay_stream_events_total")
	if err != nil || streamed < 900 {
		t.Errorf("the stream read %v events (%v), want all 900", streamed, err)
	}
	stop(t, p)
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
		t.Errorf("%d events quarantined", n)
	}
	e.verifyTopic(t, nil, nil)
}
