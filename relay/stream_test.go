package relay_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// binlogRelay starts a `herald relay --source binlog` process.
func (e *env) binlogRelay(t *testing.T, opts testenv.RelayOptions) *testenv.Process {
	t.Helper()
	opts.Env = append(opts.Env, "HERALD_SOURCE=binlog")
	return e.relay(t, opts)
}

// checkpoint reads the stream's position and its leader.
func (e *env) checkpoint(t *testing.T) (leader, position string) {
	t.Helper()
	var l, p *string
	if err := e.db.DB.QueryRow("SELECT leader, position FROM outbox_stream WHERE id = 1").Scan(&l, &p); err != nil {
		return "", ""
	}
	if l != nil {
		leader = *l
	}
	if p != nil {
		position = *p
	}
	return leader, position
}

// TestBinlogRelaySweepsThenStreams: a binlog relay starting on an outbox
// with a backlog and no checkpoint sweeps the backlog through the polling
// path, then streams what a writer commits meanwhile and after (a second
// writer starts once the stream is open, so the stream has events to read
// however long the sweep takes); kcat finds every committed event once per
// first copy, none rolled back, every aggregate in order, and the stream
// has a checkpoint.
func TestBinlogRelaySweepsThenStreams(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 6})
	e.preload(t, 2_000, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer"})
	during := e.startLiveWriter(ctx, 100, 1_500)
	p.WaitForLog(t, `"msg":"streaming"`, 2*time.Minute)
	after := e.startLiveWriter(ctx, 100, 300)
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() (bool, string) {
		for _, lw := range []*liveWriter{during, after} {
			select {
			case <-lw.done:
			default:
				return false, "a writer still writing"
			}
		}
		n := e.unpublished(t)
		return n == 0, fmt.Sprintf("%d unpublished", n)
	})
	_, rolledBackDuring := during.wait(t)
	_, rolledBackAfter := after.wait(t)
	rolledBack := append(rolledBackDuring, rolledBackAfter...)
	testenv.WaitFor(t, 10*time.Second, "a checkpoint after the last event", func() (bool, string) {
		leader, pos := e.checkpoint(t)
		return leader == "streamer" && pos != "", fmt.Sprintf("leader %q, position %q", leader, pos)
	})
	streamed, err := p.Metric("herald_relay_stream_events_total")
	if err != nil {
		t.Fatal(err)
	}
	if streamed == 0 {
		t.Error("the stream read no event: everything went through the polling path")
	}
	// herald status names the source, the leader and the position.
	out, _ := exec.Command(testenv.HeraldBinary(t), "status", "--json", "--mysql-dsn", e.db.DSN,
		"--kafka-brokers", strings.Join(e.brokers, ",")).Output()
	var status struct {
		Stream struct{ Source, Leader, Position string } `json:"stream"`
	}
	if err := json.Unmarshal(out, &status); err != nil {
		t.Fatalf("herald status --json: %v\n%s", err, out)
	}
	if status.Stream.Source != "binlog" || status.Stream.Leader != "streamer" || status.Stream.Position == "" {
		t.Errorf("herald status says stream %+v, want source binlog, leader streamer and a position", status.Stream)
	}
	stop(t, p)
	e.verifyTopic(t, nil, rolledBack)
}

// TestKilledStreamLeadersLoseNothing: three binlog relays under continuous
// writes (a quarter of the transactions rolled back); the leader is
// SIGKILLed five times, each time right after it streamed, and restarted
// under a new id. A standby takes over each time (the failover is logged,
// with the relays' default lease), every committed event reaches the topic,
// no rolled-back one does, every aggregate's first copies are in order;
// duplicates are counted.
func TestKilledStreamLeadersLoseNothing(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	e := newEnv(t, testenv.TopicOptions{Partitions: 6})
	killStreamLeaders(t, e, 5, e.binlogRelay)
}

// TestKilledStreamLeadersLoseNoInsertThenDelete is the kill test with a
// writer of Debezium's habit: every event inserted into a foreign outbox
// table herald copies (herald migrate up --mapping) and deleted in the
// same transaction, so only the binlog and the copy keep it. Three binlog
// relays, the leader SIGKILLed three times: every committed event on the
// topic (kcat), no rolled-back one, order per aggregate, the foreign
// table empty.
func TestKilledStreamLeadersLoseNoInsertThenDelete(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	e := newEnv(t, testenv.TopicOptions{Partitions: 6})
	e.mapForeignTable(t)
	killStreamLeaders(t, e, 3, e.binlogRelay)
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox"); n != 0 {
		t.Errorf("%d rows left in the foreign table; the writer deleted each", n)
	}
}

// killStreamLeaders is the kill test of a stream source: three relays
// started by start under continuous writes, the leader SIGKILLed kills
// times and restarted under a new id (see
// TestKilledStreamLeadersLoseNothing). It logs each failover's time, from
// the kill to another relay streaming.
func killStreamLeaders(t *testing.T, e *env, kills int, start func(*testing.T, testenv.RelayOptions) *testenv.Process) {
	const aggregates = 100
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	incarnation := map[string]int{}
	relays := map[string]*testenv.Process{} // current relay id -> process
	restart := func(slot string) {
		incarnation[slot]++
		id := fmt.Sprintf("%s-%d", slot, incarnation[slot])
		relays[id] = start(t, testenv.RelayOptions{Name: id})
	}
	for _, slot := range []string{"s-a", "s-b", "s-c"} {
		restart(slot)
	}
	writers := []*liveWriter{e.startLiveWriter(ctx, aggregates, 1_000_000)}
	streamed := func(id string) float64 {
		n, err := relays[id].Metric("herald_relay_stream_events_total")
		if err != nil {
			return 0
		}
		return n
	}
	var failovers []time.Duration
	for k := 0; k < kills; k++ {
		var leader string
		testenv.WaitFor(t, time.Minute, "a leader that streams", func() (bool, string) {
			leader, _ = e.checkpoint(t)
			return relays[leader] != nil && streamed(leader) > 0, fmt.Sprintf("leader %q", leader)
		})
		relays[leader].Kill(t)
		killedAt := time.Now()
		delete(relays, leader)
		slot := leader[:3]
		testenv.WaitFor(t, time.Minute, "another relay streams", func() (bool, string) {
			now, _ := e.checkpoint(t)
			return now != leader && relays[now] != nil && streamed(now) > 0, fmt.Sprintf("leader %q", now)
		})
		failovers = append(failovers, time.Since(killedAt))
		restart(slot)
	}
	writers[0].stop()
	committedN, rolledBack := writers[0].wait(t)
	testenv.WaitFor(t, time.Minute, "everything published", func() (bool, string) {
		n := e.unpublished(t)
		return n == 0, fmt.Sprintf("%d unpublished", n)
	})
	t.Logf("%d events committed, %d leaders killed; time until another relay streamed: %v", committedN, kills, failovers)
	var live []*testenv.Process
	for _, p := range relays {
		live = append(live, p)
	}
	stop(t, live...)
	report := e.verifyTopic(t, nil, rolledBack)
	t.Logf("%d duplicates after %d failovers", report.Duplicates, kills)
}

// TestStreamCrashWindows kills a binlog relay at each of the stream's
// failpoints while a writer commits: becoming leader (before it opens the
// stream), after it read and planned a batch (before Kafka), and after
// Kafka acknowledged a batch (before its marks and checkpoint). A standby
// takes over; nothing is lost, the order holds, and the acknowledged batch
// is published again. (Any crash may also cost the marks of the batch
// before, settling in the background: more duplicates, never a loss.)
func TestStreamCrashWindows(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	streamCrashWindows(t, testenv.MariaDB, (*env).binlogRelay)
}

// streamCrashWindows is TestStreamCrashWindows for the source start
// starts, on server.
func streamCrashWindows(t *testing.T, server testenv.Server, start func(*env, *testing.T, testenv.RelayOptions) *testenv.Process) {
	for _, tt := range []struct {
		failpoint string
		acked     bool // the batch in hand was on the topic at the crash
	}{
		// crash@3: past the sweep, in the stream's third batch.
		{"stream.after_lead=crash", false},
		{"stream.after_read=crash@3", false},
		{"stream.after_ack_before_checkpoint=crash@3", true},
	} {
		t.Run(strings.SplitN(tt.failpoint, "=", 2)[0], func(t *testing.T) {
			e := newEnvOn(t, server, testenv.TopicOptions{Partitions: 3})
			e.preload(t, 200, 20)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lw := e.startLiveWriter(ctx, 20, 1_000_000)
			dying := start(e, t, testenv.RelayOptions{Name: "dying", Lease: 3 * time.Second, Failpoints: tt.failpoint})
			if exit := dying.Wait(t, time.Minute); exit.Signal != syscall.SIGKILL {
				t.Fatalf("relay ended with %v, want SIGKILL at %s\n%s", exit, tt.failpoint, dying.Tail(20))
			}
			inHand := failpoint.EventsAtCrash(dying.Log())
			rescuer := start(e, t, testenv.RelayOptions{Name: "rescuer", Lease: 3 * time.Second})
			rescuer.WaitForMetric(t, "herald_relay_stream_events_total", time.Minute, "the rescuer streams",
				func(v float64) bool { return v > 0 })
			lw.stop()
			_, rolledBack := lw.wait(t)
			e.waitDrained(t, time.Minute)
			stop(t, rescuer)
			report := e.verifyTopic(t, nil, rolledBack)
			published := e.published(t)
			for _, id := range inHand {
				if !published[id] {
					t.Errorf("event %s the dead leader had in hand is not published", id)
				}
			}
			if tt.acked && (len(inHand) == 0 || report.Duplicates < len(inHand)) {
				t.Errorf("died after Kafka acknowledged %d events, yet %d duplicates: the batch was not published again", len(inHand), report.Duplicates)
			}
		})
	}
}

// TestStreamRereadsABatchWhoseSettlementFailed: a streamed batch with a
// failure (an event of 50 KB on a topic that takes 10,000 bytes) must be
// settled, its failure written, before any checkpoint passes it; here that
// settlement fails (failpoint relay.settle=fail@1: the outbox is empty
// when the relay starts, so the first settlement is the stream's). The
// stream must read the batch again from its checkpoint: going on from the
// reader's position, the next checkpoint would pass the big event, neither
// acknowledged nor handed over, and its untouched row would count as
// published (docs/design.md, section 9.5, S1). So: the big event ends up
// quarantined (never published), the rest published, in order.
func TestStreamRereadsABatchWhoseSettlementFailed(t *testing.T) {
	t.Parallel() // the relay runs as a process on a database and topic of its own
	maxBytes := "10000"
	e := newEnv(t, testenv.TopicOptions{Partitions: 2, Configs: map[string]*string{"max.message.bytes": &maxBytes}})
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer", Failpoints: failpoint.RelaySettle + "=fail@1"})
	p.WaitForLog(t, `"msg":"streaming"`, time.Minute)
	noise := make([]byte, 37_500) // random: the producer's compression cannot shrink it under the limit
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	big := event("big", 1)
	big.Payload = json.RawMessage(fmt.Sprintf(`{"order_id":"big","blob":%q}`, base64.StdEncoding.EncodeToString(noise)))
	ids, err := e.write(context.Background(), true, big, event("small", 1), event("small", 2))
	if err != nil {
		t.Fatal(err)
	}
	p.WaitForLog(t, failpoint.ErrInjected.Error(), time.Minute)
	testenv.WaitFor(t, time.Minute, "the big event quarantined, the others published", func() (bool, string) {
		published := e.published(t)
		q := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL AND id = ?", ids[0])
		return q == 1 && !published[ids[0]] && published[ids[1]] && published[ids[2]],
			fmt.Sprintf("big quarantined %d, published %v", q, published)
	})
	stop(t, p)
	e.verifyTopic(t, func(r verify.Row) bool { return r.ID != ids[0] }, []string{ids[0]})
}

// TestStreamCheckpointFailureLosesNothing: the checkpoint that would
// publish acknowledged events fails (failpoint stream.checkpoint=fail@2,
// the second such checkpoint: the second round of events). Everything
// before the reader's position is acknowledged, so the stream goes on and
// a later checkpoint publishes those events too: every event ends up
// published (the watermark passes it) and on the topic, in order.
func TestStreamCheckpointFailureLosesNothing(t *testing.T) {
	t.Parallel() // the relay runs as a process on a database and topic of its own
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer", Failpoints: failpoint.StreamCheckpoint + "=fail@2"})
	p.WaitForLog(t, `"msg":"streaming"`, time.Minute)
	ctx := context.Background()
	for i, agg := range []string{"first", "failed", "after"} {
		if _, err := e.write(ctx, true, event(agg, 1), event(agg, 2)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			p.WaitForLog(t, failpoint.ErrInjected.Error(), time.Minute)
		}
		e.waitDrained(t, time.Minute)
	}
	stop(t, p)
	e.verifyTopic(t, nil, nil)
}

// TestStreamRidesRotationAndSchemaChanges: while a binlog relay streams a
// writer's events, the binlog rotates twice (FLUSH BINARY LOGS) and a
// migration adds a column to outbox_events; the stream goes on without
// reopening, and every event is published in order.
func TestStreamRidesRotationAndSchemaChanges(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer"})
	p.WaitForLog(t, `"msg":"streaming"`, 2*time.Minute)
	lw := e.startLiveWriter(ctx, 50, 1_000_000)
	streamedAtLeast := func(n float64) {
		t.Helper()
		p.WaitForMetric(t, "herald_relay_stream_events_total", time.Minute, fmt.Sprintf("%v events streamed", n),
			func(v float64) bool { return v >= n })
	}
	streamedAtLeast(200)
	testenv.MariaDBRoot(t, "FLUSH BINARY LOGS")
	streamedAtLeast(400)
	if _, err := e.db.DB.Exec("ALTER TABLE outbox_events ADD COLUMN extra INT NULL"); err != nil {
		t.Fatal(err)
	}
	streamedAtLeast(600)
	testenv.MariaDBRoot(t, "FLUSH BINARY LOGS")
	streamedAtLeast(800)
	lw.stop()
	_, rolledBack := lw.wait(t)
	e.waitDrained(t, time.Minute)
	if strings.Contains(p.Log(), "stream closed") {
		t.Errorf("the stream was reopened:\n%s", p.Tail(20))
	}
	stop(t, p)
	e.verifyTopic(t, nil, rolledBack)
}

// TestStreamSweepsWhenItsPositionIsGone: the stream's checkpoint names a
// binlog the server no longer has (purged while no relay ran): a relay
// that starts says so, sweeps the outbox through the polling path, and
// streams again from the head; nothing is lost.
func TestStreamSweepsWhenItsPositionIsGone(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	e.preload(t, 300, 30)
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "first"})
	e.waitDrained(t, time.Minute)
	stop(t, p)
	e.preload(t, 300, 30) // committed while no relay runs
	if _, err := e.db.DB.Exec("UPDATE outbox_stream SET position = 'file:mariadb-bin.000000:4'"); err != nil {
		t.Fatal(err)
	}
	q := e.binlogRelay(t, testenv.RelayOptions{Name: "second"})
	q.WaitForLog(t, "no longer on the server; sweeping", time.Minute)
	q.WaitForLog(t, "sweep done", time.Minute)
	e.waitDrained(t, time.Minute)
	if _, pos := e.checkpoint(t); pos == "file:mariadb-bin.000000:4" {
		t.Errorf("the checkpoint still names the gone position")
	}
	stop(t, q)
	e.verifyTopic(t, nil, nil)
}

// TestStreamQuarantinesATooLargeRecord: on a topic whose max.message.bytes
// is 10,000, the stream meets an event of 50 KB: it fails, goes to the
// polling path, fails again alone and is quarantined; the later events of
// its aggregate are held behind it, every other aggregate is published.
func TestStreamQuarantinesATooLargeRecord(t *testing.T) {
	maxBytes := "10000"
	e := newEnv(t, testenv.TopicOptions{Partitions: 2, Configs: map[string]*string{"max.message.bytes": &maxBytes}})
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer"})
	p.WaitForLog(t, `"msg":"streaming"`, 2*time.Minute)
	noise := make([]byte, 37_500)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	big := event("big", 1)
	big.Payload = json.RawMessage(fmt.Sprintf(`{"order_id":"big","blob":%q}`, base64.StdEncoding.EncodeToString(noise)))
	events := []outbox.Event{big, event("big", 2), event("big", 3)}
	for i := range 60 {
		events = append(events, event(aggName(i%20), i))
	}
	ids, err := e.write(context.Background(), true, events...)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the big event quarantined, the rest published", func() (bool, string) {
		q := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL")
		pub := len(e.published(t))
		held := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE error_class = 'held' AND published_at IS NULL")
		return q == 1 && pub == 60 && held == 2, fmt.Sprintf("%d quarantined, %d published, %d held", q, pub, held)
	})
	if n, err := p.Metric("herald_relay_stream_handed_over_total"); err != nil || n == 0 {
		if n2, _ := p.Metric("herald_relay_failures_total"); n2 == 0 {
			t.Errorf("the stream handed nothing over (%v, %v) and nothing failed", n, err)
		}
	}
	stop(t, p)
	e.verifyTopic(t, func(r verify.Row) bool { return r.Published }, nil)
	var quarantined string
	if err := e.db.DB.QueryRow("SELECT id FROM outbox_events WHERE quarantined_at IS NOT NULL").Scan(&quarantined); err != nil || quarantined != ids[0] {
		t.Errorf("quarantined %q (%v), want the big event %s", quarantined, err, ids[0])
	}
}

// TestBinlogRelayNeedsReplicationGrants: a relay whose user lacks the
// replication grants stops at start with a message naming them.
func TestBinlogRelayNeedsReplicationGrants(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 1})
	user := "herald_norepl_" + fmt.Sprint(time.Now().UnixNano()%1_000_000)
	testenv.MariaDBRoot(t, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'x'",
		"GRANT ALL PRIVILEGES ON `"+e.db.Name+"`.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	dsn := strings.Replace(e.db.DSN, "herald:herald@", user+":x@", 1)
	p := testenv.StartRelay(t, testenv.RelayOptions{Name: "no-grants", DSN: dsn, Brokers: e.brokers,
		Topics: map[string]string{"order": e.topic}, Env: []string{"HERALD_SOURCE=binlog"}})
	exit := p.Wait(t, time.Minute)
	if exit.Code == 0 {
		t.Fatalf("the relay started without replication grants:\n%s", p.Tail(10))
	}
	for _, want := range []string{"REPLICATION SLAVE", "REPLICATION CLIENT", "GRANT"} {
		if !strings.Contains(p.Log(), want) {
			t.Errorf("the start-up error does not name %s:\n%s", want, p.Tail(10))
		}
	}
}
