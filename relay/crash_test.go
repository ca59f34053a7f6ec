package relay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
)

// slot is one relay position the supervisor keeps filled: when its process
// dies it starts the next incarnation under a new relay id.
type slot struct {
	name string
	// failpoints per incarnation (1-based); later incarnations run clean.
	failpoints []string
	// killBusy: the test SIGKILLs this many incarnations while they hold a
	// lease.
	killBusy    int
	incarnation int
	proc        *testenv.Process
}

func (s *slot) id() string { return fmt.Sprintf("%s-%d", s.name, s.incarnation) }

// death is one relay incarnation killed mid-batch, and the rows its lease
// held when it died.
type death struct {
	relayID string
	how     string
	orphans []string
}

// TestKilledRelaysLoseNothing: three relay slots drain 6,000 events while a
// writer adds more; relay incarnations die by SIGKILL mid-batch at least six
// times — after Kafka acknowledged a batch but before it was marked
// (relay.after_ack_before_mark=crash@2), right after a claim committed
// (relay.after_claim=crash@3), and by a plain SIGKILL from the test while
// the process holds a lease (its batches stall 300ms before producing, so
// the test catches one). A supervisor restarts each slot under a new relay
// id, and writers keep adding events until all six deaths happened. With a 2s lease, the rows a dead relay held are taken over by
// another lease (attempts >= 2, locked_by another relay) and published;
// kcat finds nothing lost and every aggregate in order.
func TestKilledRelaysLoseNothing(t *testing.T) {
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
		// first incarnations leased long enough for the test to catch it.
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

	// leasedBy lists the unpublished rows a relay id holds: for a dead
	// relay, the batch it was working on.
	leasedBy := func(relayID string) []string {
		return e.db.Strings(t, "SELECT id FROM outbox_events WHERE locked_by = ? AND published_at IS NULL", relayID)
	}
	var deaths []death
	began := time.Now()
	testenv.WaitFor(t, 3*time.Minute, "drain with crashes", func() (bool, string) {
		for _, s := range slots {
			if s.incarnation <= s.killBusy && !s.proc.Exited() && len(leasedBy(s.id())) > 0 {
				s.proc.Kill(t)
				deaths = append(deaths, death{relayID: s.id(), how: "SIGKILL by the test while holding a lease"})
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
			// The process is reaped: what its id still holds is its orphaned
			// batch (nothing can settle it any more).
			deaths[len(deaths)-1].orphans = leasedBy(s.id())
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
	stop(t, live...)

	orphans := 0
	for _, d := range deaths {
		t.Logf("%s died (%s) holding %d unpublished events", d.relayID, d.how, len(d.orphans))
		orphans += len(d.orphans)
		for _, id := range d.orphans {
			var lockedBy string
			var attempts int
			var published bool
			if err := e.db.DB.QueryRow(e.db.SQL("SELECT locked_by, attempts, published_at IS NOT NULL FROM outbox_events WHERE id = ?"), id).
				Scan(&lockedBy, &attempts, &published); err != nil {
				t.Fatal(err)
			}
			// A relay id is never reused, so another locked_by is another
			// lease (that relay may have died later itself, after settling).
			if !published || lockedBy == d.relayID || attempts < 2 {
				t.Errorf("event %s orphaned by %s: published %v by %q after %d attempts; want published under another relay's lease (attempts >= 2)",
					id, d.relayID, published, lockedBy, attempts)
			}
		}
	}
	if orphans == 0 {
		t.Error("no relay died holding a lease: the test proved nothing about takeover")
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
