package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// walRelay starts a `herald relay --source wal` process on e's
// PostgreSQL database.
func (e *env) walRelay(t *testing.T, opts testenv.RelayOptions) *testenv.Process {
	t.Helper()
	opts.Env = append(opts.Env, "HERALD_SOURCE=wal")
	return e.relay(t, opts)
}

// statusJSON is `herald status --json` on e's database.
func (e *env) statusJSON(t *testing.T) status.Report {
	t.Helper()
	out, _ := exec.Command(testenv.HeraldBinary(t), "status", "--json", "--database-url", e.db.DSN,
		"--kafka-brokers", strings.Join(e.brokers, ",")).Output()
	var rep status.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("herald status --json: %v\n%s", err, out)
	}
	return rep
}

// TestWALRelaySweepsThenStreams: a wal relay starting on a PostgreSQL
// outbox with a backlog, no checkpoint and no slot sweeps the backlog
// through the polling path, creates the slot, then streams what a writer
// commits meanwhile and after; kcat finds every committed event, none
// rolled back, every aggregate in order; herald status names the source,
// the leader, the position and the slot, and the metrics show the slot.
func TestWALRelaySweepsThenStreams(t *testing.T) {
	e := newEnvOn(t, testenv.PostgreSQL, testenv.TopicOptions{Partitions: 6})
	e.preload(t, 2_000, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.walRelay(t, testenv.RelayOptions{Name: "streamer", Env: []string{"HERALD_BACKLOG_INTERVAL=1s"}})
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
	streamed, err := p.Metric("herald_relay_stream_events_total")
	if err != nil {
		t.Fatal(err)
	}
	if streamed == 0 {
		t.Error("the stream read no event: everything went through the polling path")
	}
	// The slot's gauges come with the backlog's.
	p.WaitForMetric(t, "herald_stream_slot_active", time.Minute, "the slot's gauges", func(v float64) bool { return v == 1 })
	if retained, err := p.Metric("herald_stream_slot_retained_bytes"); err != nil || retained <= 0 {
		t.Errorf("herald_stream_slot_retained_bytes = %v (%v), want the slot's WAL", retained, err)
	}
	rep := e.statusJSON(t)
	if st := rep.Stream; st == nil || st.Source != "wal" || st.Leader != "streamer" || !strings.HasPrefix(st.Position, "pg-lsn:") ||
		len(st.Slots) != 1 || !st.Slots[0].Active {
		t.Errorf("herald status says stream %+v, want source wal, leader streamer, a WAL position and its active slot", st)
	}
	stop(t, p)
	e.verifyTopic(t, nil, append(rolledBackDuring, rolledBackAfter...))
}

// TestKilledWALLeadersLoseNothing is TestKilledStreamLeadersLoseNothing
// with --source wal on PostgreSQL: three relays share one slot, the lease
// deciding who reads it; each killed leader's slot is taken over by a
// standby (default lease), nothing committed is lost, nothing rolled back
// published, every aggregate in order. The failover times are logged.
func TestKilledWALLeadersLoseNothing(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	e := newEnvOn(t, testenv.PostgreSQL, testenv.TopicOptions{Partitions: 6})
	killStreamLeaders(t, e, 4, e.walRelay)
}

// TestWALStreamFallsBackWhenItsSlotIsDropped: the slot is dropped under a
// streaming wal relay while a writer commits (its connection ended first,
// as herald stream drop --force does). The relay says its position is
// gone, sweeps the outbox through the polling path, creates the slot
// anew and streams again; herald status shows the new slot; nothing
// committed is lost, nothing rolled back published, every aggregate in
// order.
func TestWALStreamFallsBackWhenItsSlotIsDropped(t *testing.T) {
	t.Parallel() // the relay runs as a process on a database and topic of its own
	e := newEnvOn(t, testenv.PostgreSQL, testenv.TopicOptions{Partitions: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.walRelay(t, testenv.RelayOptions{Name: "streamer"})
	p.WaitForLog(t, `"msg":"streaming"`, time.Minute)
	lw := e.startLiveWriter(ctx, 30, 1_000_000)
	p.WaitForMetric(t, "herald_relay_stream_events_total", time.Minute, "the relay streams", func(v float64) bool { return v >= 100 })
	cfg := wal.Config{URL: e.db.DSN}
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if slot, _, err := wal.Drop(dctx, e.db.DB, cfg, false); err != nil || !slot {
		t.Fatalf("drop the slot under the relay: %v (dropped: %v)", err, slot)
	}
	p.WaitForLog(t, "no longer on the server; sweeping", time.Minute)
	p.WaitForLog(t, "sweep done", time.Minute)
	streamedBefore, _ := p.Metric("herald_relay_stream_events_total")
	p.WaitForMetric(t, "herald_relay_stream_events_total", time.Minute, "the relay streams again",
		func(v float64) bool { return v > streamedBefore })
	lw.stop()
	_, rolledBack := lw.wait(t)
	e.waitDrained(t, time.Minute)
	if st := e.statusJSON(t).Stream; st == nil || len(st.Slots) != 1 || st.Slots[0].Name != wal.SlotName(e.db.Name) || !st.Slots[0].Active {
		t.Errorf("herald status says stream %+v, want the slot %s created anew and streaming", st, wal.SlotName(e.db.Name))
	}
	stop(t, p)
	e.verifyTopic(t, nil, rolledBack)
}

// TestWALStreamCrashWindows is TestStreamCrashWindows with --source wal:
// the leader SIGKILLed as it becomes leader (before it sweeps and creates
// the slot), after it read and planned a batch, and after Kafka
// acknowledged one (before the checkpoint); the rescuer resumes from the
// checkpoint through the same slot and loses nothing.
func TestWALStreamCrashWindows(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	streamCrashWindows(t, testenv.PostgreSQL, (*env).walRelay)
}
