package relay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// slot is one relay position the supervisor keeps filled: when its process
// dies it starts the next incarnation under a new relay id.
type slot struct {
	name string
	// failpoints per incarnation (1-based); later incarnations run clean.
	failpoints []string
	// killBusy: the test SIGKILLs this many incarnations while they own
	// buckets and have a batch in flight.
	killBusy    int
	incarnation int
	proc        *testenv.Process
}

func (s *slot) id() string { return fmt.Sprintf("%s-%d", s.name, s.incarnation) }

// death is one relay incarnation killed mid-batch, and the buckets it
// owned when it died (bucket -> epoch).
type death struct {
	relayID string
	how     string
	buckets map[int]uint64
}

// TestKilledRelaysLoseNothing: three relay slots drain 6,000 events while a
// writer adds more; relay incarnations die by SIGKILL mid-batch at least six
// times — after Kafka acknowledged a batch but before it was marked
// (relay.after_ack_before_mark=crash@2), right after a claim
// (relay.after_claim=crash@3), and by a plain SIGKILL from the test while
// the process has a batch in flight (its batches stall 300ms before
// producing, so the test catches one). A supervisor restarts each slot
// under a new relay id, and writers keep adding events until all six deaths
// happened. With a 2s lease, every bucket a dead relay owned is taken over
// by another relay (a higher epoch) and its events published; kcat finds
// nothing lost and every aggregate in order.
func TestKilledRelaysLoseNothing(t *testing.T) {
	t.Parallel() // relays run as processes on a database and topic of their own
	testenv.OnEachServer(t, testKilledRelaysLoseNothing)
}

func testKilledRelaysLoseNothing(t *testing.T, server testenv.Server) {
	const (
		backlog    = 6_000
		aggregates = 200
		lease      = 2 * time.Second
	)
	e := newEnvOn(t, server, testenv.TopicOptions{Partitions: 6})
	e.preload(t, backlog, aggregates)

	slots := []*slot{
		{name: "ack", failpoints: []string{"relay.after_ack_before_mark=crash@2", "relay.after_ack_before_mark=crash@2"}},
		{name: "claim", failpoints: []string{"relay.after_claim=crash@3", "relay.after_claim=crash@3"}},
		// A short stall before producing keeps each batch of this slot's
		// first incarnations in flight long enough for the test to catch it.
		{name: "kill", killBusy: 2, failpoints: []string{"relay.before_publish=sleep(300ms)", "relay.before_publish=sleep(300ms)"}},
	}
	start := func(s *slot) {
		s.incarnation++
		fp := ""
		if s.incarnation <= len(s.failpoints) {
			fp = s.failpoints[s.incarnation-1]
		}
		s.proc = e.relay(t, testenv.RelayOptions{Name: s.id(), Lease: lease, BatchSize: 100, Failpoints: fp})
	}
	for _, s := range slots {
		start(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Writers keep adding events until every planned death happened, so
	// the relays never run out of batches to die in.
	writers := []*liveWriter{e.startLiveWriter(ctx, aggregates, 500)}

	// ownedBy lists the buckets a relay id owns, with their epochs.
	ownedBy := func(relayID string) map[int]uint64 {
		rows, err := e.db.DB.Query(e.db.SQL("SELECT bucket, epoch FROM outbox_buckets WHERE owner = ?"), relayID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int]uint64{}
		for rows.Next() {
			var b int
			var epoch uint64
			if err := rows.Scan(&b, &epoch); err != nil {
				t.Fatal(err)
			}
			out[b] = epoch
		}
		return out
	}
	// busy: the process claimed a batch and owns buckets; with its 300ms
	// stall before producing, it is most likely in the middle of a batch.
	busy := func(p *testenv.Process) bool {
		claims, err := p.Metric("herald_relay_batch_size_sum")
		return err == nil && claims > 0 && len(ownedBy(p.Name)) > 0
	}
	var deaths []death
	began := time.Now()
	testenv.WaitFor(t, 3*time.Minute, "drain with crashes", func() (bool, string) {
		for _, s := range slots {
			if s.incarnation <= s.killBusy && !s.proc.Exited() && busy(s.proc) {
				s.proc.Kill(t)
				deaths = append(deaths, death{relayID: s.id(), how: "SIGKILL by the test with a batch in flight"})
			} else if s.proc.Exited() {
				if s.incarnation > len(s.failpoints) || s.killBusy > 0 {
					t.Fatalf("%s exited (%v), unplanned\n%s", s.id(), s.proc.Exit(), s.proc.Tail(20))
				}
				exit := s.proc.Exit()
				if exit.Signal != syscall.SIGKILL {
					t.Fatalf("%s ended with %v, want death by SIGKILL at its failpoint\n%s", s.id(), exit, s.proc.Tail(20))
				}
				if !strings.Contains(s.proc.Log(), "failpoint") {
					t.Fatalf("%s was killed, but not by its failpoint\n%s", s.id(), s.proc.Tail(20))
				}
				deaths = append(deaths, death{relayID: s.id(), how: "failpoint " + s.failpoints[s.incarnation-1]})
			} else {
				continue
			}
			// The process is reaped: what its id still owns waits for its
			// lease to end (nothing can renew or free it any more).
			deaths[len(deaths)-1].buckets = ownedBy(s.id())
			start(s)
		}
		lw := writers[len(writers)-1]
		select {
		case <-lw.done:
		default:
			return false, fmt.Sprintf("%d deaths, writer still writing", len(deaths))
		}
		if len(deaths) < 6 {
			writers = append(writers, e.startLiveWriter(ctx, aggregates, 500))
			return false, fmt.Sprintf("%d deaths", len(deaths))
		}
		n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL")
		return n == 0, fmt.Sprintf("%d deaths, %d unpublished", len(deaths), n)
	})
	var rolledBack []string
	for _, lw := range writers {
		_, rb := lw.wait(t)
		rolledBack = append(rolledBack, rb...)
	}
	t.Logf("drained in %v with %d relay deaths", time.Since(began).Round(time.Millisecond), len(deaths))
	var live []*testenv.Process
	for _, s := range slots {
		live = append(live, s.proc)
	}
	// Every bucket a dead relay owned went to another relay at a later
	// epoch (taken over after its lease), never back to the dead id.
	orphaned := 0
	for _, d := range deaths {
		t.Logf("%s died (%s) owning %d buckets", d.relayID, d.how, len(d.buckets))
		orphaned += len(d.buckets)
		if left := ownedBy(d.relayID); len(left) > 0 {
			t.Errorf("%s still owns buckets %v after the drain", d.relayID, left)
		}
		for b, epoch := range d.buckets {
			var now uint64
			if err := e.db.DB.QueryRow(e.db.SQL("SELECT epoch FROM outbox_buckets WHERE bucket = ?"), b).Scan(&now); err != nil {
				t.Fatal(err)
			}
			if now <= epoch {
				t.Errorf("bucket %d of dead %s still at epoch %d: never taken over", b, d.relayID, epoch)
			}
		}
	}
	stop(t, live...)
	if orphaned == 0 {
		t.Error("no relay died owning buckets: the test proved nothing about takeover")
	}
	failpointDeaths := slices.IndexFunc(deaths, func(d death) bool { return strings.HasPrefix(d.how, "failpoint relay.after_ack") })
	if failpointDeaths < 0 {
		t.Error("no relay died between Kafka's acknowledgement and the mark")
	}
	report := e.verifyTopic(t, nil, rolledBack)
	if failpointDeaths >= 0 && report.Duplicates == 0 {
		t.Error("a relay died after Kafka acknowledged its batch, yet the topic holds no duplicate: its batch was not republished")
	}
}
