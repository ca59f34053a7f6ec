// Package streamtest is the conformance suite of herald's change-stream
// sources: every behaviour package relay relies on from a
// relay.StreamSource, exercised against a real database server. A source
// package runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		streamtest.Run(t, func(t testing.TB, chunk int) streamtest.Harness { ... })
//	}
//
// relay/binlogsource (MariaDB) and relay/walsource (PostgreSQL) run it. The
// suite writes events only with outbox.Writer and reads them only from the
// source; what no writer or source offers (a neighbouring table's write, a
// position the server lost) comes from the Harness's hooks.
package streamtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

// Harness is one fresh database with herald's schema and a source
// streaming its outbox.
type Harness struct {
	// DB is the fresh database; Dialect its dialect.
	DB      *sql.DB
	Dialect store.Dialect
	// Source streams DB's outbox, handing a transaction out in chunks of
	// at most the chunk size NewHarness was given.
	Source relay.StreamSource
	// WriteNeighbour commits a transaction that writes a table of DB other
	// than the outbox.
	WriteNeighbour func(t testing.TB)
	// Lose makes the server unable to stream from position (MariaDB: a
	// binlog it purged; PostgreSQL: the slot dropped) and returns the
	// position to open, which the source must report gone.
	Lose func(t testing.TB, position string) string
}

// NewHarness makes a Harness on a fresh database for one test, its source
// chunking transactions at chunk events.
type NewHarness func(t testing.TB, chunk int) Harness

// chunk is the chunk size the suite asks for: small, so a transaction of
// a few thousand events is many chunks.
const chunk = 50

// readTimeout bounds every wait for the stream.
const readTimeout = 30 * time.Second

// Run runs every conformance test, one after the other (a source may hold
// a scarce server resource per database, such as a replication slot).
func Run(t *testing.T, newHarness NewHarness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CommitOrder", testCommitOrder},
		{"RollbacksNeverDelivered", testRollbacks},
		{"TransactionLargerThanAChunk", testLargeTransaction},
		{"HeartbeatsOnAnIdleOutbox", testHeartbeats},
		{"ReopenResumesRightAfterThePosition", testReopen},
		{"HeadLiesAfterEndedTransactions", testHead},
		{"LostPositionIsGone", testGone},
		{"Reached", testReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newHarness(t, chunk)) })
	}
}

// stream is an open reader and what it has handed out so far.
type stream struct {
	t testing.TB
	r relay.StreamReader
}

// open opens the harness's source at from; the test closes it.
func open(t testing.TB, h Harness, from string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	r, err := h.Source.Open(ctx, from)
	if err != nil {
		t.Fatalf("open the stream at %s: %v", from, err)
	}
	t.Cleanup(func() { r.Close() })
	return &stream{t: t, r: r}
}

// next reads one transaction or chunk.
func (s *stream) next() relay.StreamTx {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	tx, err := s.r.Next(ctx)
	if err != nil {
		s.t.Fatalf("read the stream: %v", err)
	}
	return tx
}

// untilEvents reads until a transaction with events, skipping heartbeats.
func (s *stream) untilEvents() relay.StreamTx {
	s.t.Helper()
	for {
		if tx := s.next(); len(tx.Events) > 0 {
			return tx
		}
	}
}

// whole reads the next transaction with events whole (its chunks
// joined), checking that only its last piece carries a position.
func (s *stream) whole() ([]store.Event, string) {
	s.t.Helper()
	var events []store.Event
	tx := s.untilEvents()
	for {
		events = append(events, tx.Events...)
		if tx.Position != "" {
			return events, tx.Position
		}
		tx = s.next()
		if len(tx.Events) == 0 {
			s.t.Fatalf("a heartbeat (position %q) inside a chunked transaction", tx.Position)
		}
	}
}

// head reads the source's head.
func head(t testing.TB, h Harness) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	p, err := h.Source.Head(ctx)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	return p
}

// startHead is where a test's stream starts: the sweep's head when the
// source has one.
func startHead(t testing.TB, h Harness) string {
	t.Helper()
	sw, ok := h.Source.(relay.StreamSweeper)
	if !ok {
		return head(t, h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	p, err := sw.SweepHead(ctx)
	if err != nil {
		t.Fatalf("sweep head: %v", err)
	}
	return p
}

func reached(t testing.TB, h Harness, position, target string) bool {
	t.Helper()
	ok, err := h.Source.Reached(position, target)
	if err != nil {
		t.Fatalf("reached(%s, %s): %v", position, target, err)
	}
	return ok
}

// writer writes outbox events in the harness's transactions.
type writer struct {
	t testing.TB
	h Harness
	w *outbox.Writer
	n int
}

func newWriter(t testing.TB, h Harness) *writer {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Dialect: h.Dialect})
	if err != nil {
		t.Fatal(err)
	}
	return &writer{t: t, h: h, w: w}
}

// events makes n events of aggregate agg.
func (w *writer) events(agg string, n int) []outbox.Event {
	out := make([]outbox.Event, n)
	for i := range out {
		w.n++
		out[i] = outbox.Event{AggregateType: "order", AggregateID: agg, EventType: "order.updated", SchemaVersion: 1,
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, w.n))}
	}
	return out
}

// begin opens a transaction.
func (w *writer) begin() *sql.Tx {
	w.t.Helper()
	tx, err := w.h.DB.BeginTx(context.Background(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { tx.Rollback() })
	return tx
}

// add adds events to tx and returns their ids.
func (w *writer) add(tx *sql.Tx, events []outbox.Event) []string {
	w.t.Helper()
	ids, err := w.w.Add(context.Background(), tx, events...)
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

// commit writes events in one committed transaction and returns their
// ids.
func (w *writer) commit(events []outbox.Event) []string {
	w.t.Helper()
	tx := w.begin()
	ids := w.add(tx, events)
	if err := tx.Commit(); err != nil {
		w.t.Fatal(err)
	}
	return ids
}

func exec(t testing.TB, tx *sql.Tx, query string) {
	t.Helper()
	if _, err := tx.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func ids(events []store.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// testCommitOrder: transactions come in commit order, each whole with its
// position after it, and positions only grow. A transaction that began and
// inserted first but committed last comes last.
func testCommitOrder(t *testing.T, h Harness) {
	w := newWriter(t, h)
	from := startHead(t, h)
	s := open(t, h, from)
	first := w.begin()
	firstIDs := w.add(first, w.events("late", 2))
	second := w.begin()
	secondIDs := w.add(second, w.events("early", 3))
	if err := second.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	thirdIDs := w.commit(w.events("last", 1))
	prev := from
	for i, want := range [][]string{secondIDs, firstIDs, thirdIDs} {
		events, pos := s.whole()
		if got := ids(events); !slices.Equal(got, want) {
			t.Fatalf("transaction %d: events %v, want %v (commit order, insert order within)", i, got, want)
		}
		if !reached(t, h, pos, prev) || reached(t, h, prev, pos) {
			t.Errorf("transaction %d: position %s does not lie after %s", i, pos, prev)
		}
		prev = pos
	}
}

// testRollbacks: a rolled-back transaction and the part of a committed one
// rolled back to a savepoint never come; the rest of that transaction
// does.
func testRollbacks(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	rolledBack := w.begin()
	gone := w.add(rolledBack, w.events("gone", 3))
	if err := rolledBack.Rollback(); err != nil {
		t.Fatal(err)
	}
	tx := w.begin()
	kept := w.add(tx, w.events("kept", 2))
	exec(t, tx, "SAVEPOINT before_undone")
	undone := w.add(tx, w.events("undone", 2))
	exec(t, tx, "ROLLBACK TO SAVEPOINT before_undone")
	kept = append(kept, w.add(tx, w.events("kept", 1))...)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	marker := w.commit(w.events("marker", 1))
	events, _ := s.whole()
	if got := ids(events); !slices.Equal(got, kept) {
		t.Errorf("the committed transaction came as %v, want %v (without the savepoint's %v)", got, kept, undone)
	}
	events, _ = s.whole()
	if got := ids(events); !slices.Equal(got, marker) {
		t.Errorf("after it came %v, want the marker %v (never the rolled-back %v)", got, marker, gone)
	}
}

// testLargeTransaction: a transaction of many chunks comes in chunks of
// at most the chunk size, in insert order, only the last with a position;
// the transaction after it comes whole after it.
func testLargeTransaction(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	const n = 7*chunk + 13
	var events []outbox.Event
	for i := range 10 {
		events = append(events, w.events(fmt.Sprintf("big-%d", i), n/10)...)
	}
	events = append(events, w.events("big-last", n-len(events))...)
	want := w.commit(events)
	after := w.commit(w.events("after", 2))
	var got []string
	pieces := 0
	tx := s.untilEvents()
	for {
		pieces++
		if len(tx.Events) > chunk {
			t.Errorf("a piece of %d events, more than the chunk of %d", len(tx.Events), chunk)
		}
		got = append(got, ids(tx.Events)...)
		if tx.Position != "" {
			break
		}
		if tx = s.next(); len(tx.Events) == 0 {
			t.Fatalf("a heartbeat inside the large transaction, after %d events", len(got))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the large transaction came as %d events, want its %d in insert order", len(got), len(want))
	}
	if pieces < n/chunk {
		t.Errorf("the %d events came in %d pieces, want at least %d of %d", n, pieces, n/chunk, chunk)
	}
	if next, _ := s.whole(); !slices.Equal(ids(next), after) {
		t.Errorf("after the large transaction came %v, want %v", ids(next), after)
	}
}

// testHeartbeats: with the outbox idle and a neighbouring table written,
// the stream hands out heartbeats whose position passes a head taken after
// those writes, and no event.
func testHeartbeats(t *testing.T, h Harness) {
	s := open(t, h, startHead(t, h))
	h.WriteNeighbour(t)
	target := head(t, h)
	deadline := time.Now().Add(readTimeout)
	for {
		tx := s.next()
		if len(tx.Events) > 0 {
			t.Fatalf("events %v on an idle outbox", ids(tx.Events))
		}
		if tx.Position != "" && reached(t, h, tx.Position, target) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat reached %s within %v (last %q)", target, readTimeout, tx.Position)
		}
		h.WriteNeighbour(t)
	}
}

// testReopen: a stream opened at a transaction's position starts with the
// next transaction, exactly; one opened at the last starts with what
// commits after.
func testReopen(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	var want [][]string
	for i := range 3 {
		want = append(want, w.commit(w.events(fmt.Sprintf("agg-%d", i), 2+i)))
	}
	var positions []string
	for _, tx := range want {
		events, pos := s.whole()
		if got := ids(events); !slices.Equal(got, tx) {
			t.Fatalf("read %v, want %v", got, tx)
		}
		positions = append(positions, pos)
	}
	s.r.Close()
	again := open(t, h, positions[0])
	for _, tx := range want[1:] {
		if events, _ := again.whole(); !slices.Equal(ids(events), tx) {
			t.Fatalf("reopened after the first transaction: read %v, want %v", ids(events), tx)
		}
	}
	again.r.Close()
	last := open(t, h, positions[2])
	later := w.commit(w.events("later", 1))
	if events, _ := last.whole(); !slices.Equal(ids(events), later) {
		t.Fatalf("reopened after the last transaction: read %v, want only the later %v", ids(events), later)
	}
}

// testHead: a transaction that ended before Head lies before it (a stream
// opened there never returns it), one committed after comes; the
// transaction's position is reached by the head.
func testHead(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	before := w.commit(w.events("before", 2))
	events, pos := s.whole()
	if !slices.Equal(ids(events), before) {
		t.Fatalf("read %v, want %v", ids(events), before)
	}
	s.r.Close()
	p := head(t, h)
	if !reached(t, h, p, pos) {
		t.Errorf("the head %s taken after a commit does not reach its position %s", p, pos)
	}
	after := open(t, h, p)
	later := w.commit(w.events("after", 1))
	if events, _ := after.whole(); !slices.Equal(ids(events), later) {
		t.Errorf("opened at the head: read %v, want only %v (not %v, ended before the head)", ids(events), later, before)
	}
}

// testGone: a position the server can no longer stream from is
// relay.ErrStreamPositionGone, from Open or from the reader.
func testGone(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	w.commit(w.events("agg", 1))
	_, pos := s.whole()
	s.r.Close()
	gone := h.Lose(t, pos)
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	r, err := h.Source.Open(ctx, gone)
	if err == nil {
		defer r.Close()
		for err == nil {
			_, err = r.Next(ctx)
		}
	}
	if !errors.Is(err, relay.ErrStreamPositionGone) {
		t.Fatalf("opening at the lost position %s: %v, want relay.ErrStreamPositionGone", gone, err)
	}
}

// testReached: Reached orders positions (a position reaches itself and
// what lies before it, not what lies after), and refuses what is not a
// position.
func testReached(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	w.commit(w.events("a", 1))
	w.commit(w.events("b", 1))
	_, p1 := s.whole()
	_, p2 := s.whole()
	for _, tt := range []struct {
		name             string
		position, target string
		want             bool
	}{
		{"itself", p1, p1, true},
		{"later reaches earlier", p2, p1, true},
		{"earlier does not reach later", p1, p2, false},
	} {
		if got := reached(t, h, tt.position, tt.target); got != tt.want {
			t.Errorf("%s: Reached(%s, %s) = %v, want %v", tt.name, tt.position, tt.target, got, tt.want)
		}
	}
	if _, err := h.Source.Reached("not a position", p1); err == nil {
		t.Error("Reached accepted a position that is not one")
	}
}
