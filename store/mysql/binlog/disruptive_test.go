//go:build disruptive

package binlog_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDisruptiveMariaDBRestart stops and restarts the stack's MariaDB while
// a writer commits events and two readers (one on GTID positions, one on
// file positions, which must cross into the binlog file the restarted
// server opens) stream them. Each reader reconnects by itself and returns
// every committed event exactly once, each aggregate in order, and nothing
// that did not commit. It stops the shared server: run it alone (the lead
// does, with the other disruptive tests).
func TestDisruptiveMariaDBRestart(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { testenv.StackNode(t, "start", "mariadb") }) // whatever happens, leave it running

	var logs testenv.LogBuffer
	cfg := e.config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.ReconnectBackoffCap = time.Second
	readers := map[string]*binlog.Reader{
		"gtid": openWith(t, e.db.DB, cfg, e.head(t)),
		"file": openWith(t, e.db.DB, cfg, e.fileHead(t)),
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := startWriter(ctx, e)
	streams := map[string]*collected{}
	for name, r := range readers {
		streams[name] = collect(ctx, r)
	}
	testenv.WaitFor(t, time.Minute, "events streamed before the restart", func() (bool, string) {
		n := streams["gtid"].count()
		return n >= 200 && streams["file"].count() >= 200, fmt.Sprintf("%d events", n)
	})

	testenv.StackNode(t, "stop", "mariadb")
	down := time.Now()
	t.Logf("mariadb stopped after %d committed events", w.committedCount())
	testenv.StackNode(t, "start", "mariadb")
	t.Logf("mariadb back after %v", time.Since(down).Round(time.Millisecond))
	before := w.committedCount()
	testenv.WaitFor(t, 2*time.Minute, "writes after the restart", func() (bool, string) {
		n := w.committedCount()
		return n >= before+200, fmt.Sprintf("%d committed", n)
	})
	committed, uncertain := w.stop()
	marker := e.write(t, orderEvent("marker", 1))[0]

	for name, s := range streams {
		testenv.WaitFor(t, 2*time.Minute, name+" reader: the marker", func() (bool, string) {
			return s.has(marker), fmt.Sprintf("%d events", s.count())
		})
		s.verify(t, name, committed, uncertain)
	}
	cancel()
	if n := strings.Count(logs.String(), "binlog: stream reconnected"); n < len(readers) {
		t.Errorf("%d reconnections logged, want one per reader at least:\n%s", n, logs.String())
	}
}

// writer commits two events per transaction until stopped, through the
// restart: commits that failed may or may not have happened.
type writer struct {
	cancel    context.CancelFunc
	done      chan struct{}
	mu        sync.Mutex
	committed map[string]bool
	uncertain map[string]bool
}

func startWriter(ctx context.Context, e *env) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{}), committed: map[string]bool{}, uncertain: map[string]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			agg := fmt.Sprintf("agg-%d", i%17)
			ids, err := writeOnce(ctx, e, orderEvent(agg, i), orderEvent(agg, i))
			w.mu.Lock()
			for _, id := range ids {
				if err == nil {
					w.committed[id] = true
				} else {
					w.uncertain[id] = true
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) committedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.committed)
}

func (w *writer) stop() (committed, uncertain map[string]bool) {
	w.cancel()
	<-w.done
	return w.committed, w.uncertain
}

// collected is what one reader streamed.
type collected struct {
	mu     sync.Mutex
	events []store.Event
	seen   map[string]int
	err    error
}

func collect(ctx context.Context, r *binlog.Reader) *collected {
	c := &collected{seen: map[string]int{}}
	go func() {
		for {
			tx, err := r.Next(ctx)
			c.mu.Lock()
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			for _, ev := range tx.Events {
				c.events = append(c.events, ev)
				c.seen[ev.ID]++
			}
			c.mu.Unlock()
		}
	}()
	return c
}

func (c *collected) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

func (c *collected) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[id] > 0
}

// verify checks the stream against the writer: every committed event once,
// nothing that did not commit, aggregates in order.
func (c *collected) verify(t *testing.T, name string, committed, uncertain map[string]bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		t.Errorf("%s reader stopped: %v", name, c.err)
	}
	var report bytes.Buffer
	missing := 0
	for id := range committed {
		if c.seen[id] == 0 {
			missing++
		}
	}
	lastSeq := map[string]uint64{}
	for _, ev := range c.events {
		if n := c.seen[ev.ID]; n > 1 {
			fmt.Fprintf(&report, "event %s streamed %d times\n", ev.ID, n)
		}
		if !committed[ev.ID] && !uncertain[ev.ID] && ev.AggregateID != "marker" {
			fmt.Fprintf(&report, "event %s streamed but never committed\n", ev.ID)
		}
		if prev := lastSeq[ev.AggregateID]; prev != 0 && ev.AggregateSeq <= prev {
			fmt.Fprintf(&report, "aggregate %s: seq %d after %d\n", ev.AggregateID, ev.AggregateSeq, prev)
		}
		lastSeq[ev.AggregateID] = ev.AggregateSeq
	}
	if missing > 0 {
		fmt.Fprintf(&report, "%d of %d committed events missing\n", missing, len(committed))
	}
	t.Logf("%s reader: %d events streamed; %d committed, %d uncertain", name, len(c.events), len(committed), len(uncertain))
	if report.Len() > 0 {
		t.Errorf("%s reader:\n%s", name, report.String())
	}
}
