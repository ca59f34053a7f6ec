package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
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
// path, then streams what a writer commits meanwhile and after; kcat finds
// every committed event once per first copy, none rolled back, every
// aggregate in order, and the stream has a checkpoint.
func TestBinlogRelaySweepsThenStreams(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 6})
	e.preload(t, 2_000, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.binlogRelay(t, testenv.RelayOptions{Name: "streamer"})
	lw := e.startLiveWriter(ctx, 100, 1_500)
	p.WaitForLog(t, "sweep done", time.Minute)
	testenv.WaitFor(t, 2*time.Minute, "everything published", func() (bool, string) {
		select {
		case <-lw.done:
		default:
			return false, "writer still writing"
		}
		n := count(t, e.db.DB, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL")
		return n == 0, fmt.Sprintf("%d unpublished", n)
	})
	_, rolledBack := lw.wait(t)
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
	stop(t, p)
	e.verifyTopic(t, nil, rolledBack)
}
