// Package streamtest is the conformance suite of herald's change-stream
// readers: every behaviour package relay relies on from a
// changestream.Source and its readers, exercised against a real database
// server. A reader's package runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		streamtest.Run(t, func(t testing.TB, cfg changestream.Config) streamtest.Harness { ... })
//	}
//
// store/mysql/binlog (MariaDB) and store/postgres/wal (PostgreSQL) run it.
// The suite writes events only with outbox.Writer (or, for rows a foreign
// writer got wrong, through the Harness) and reads them only from the
// source; what no writer or source offers (a neighbouring table's write,
// a position the server lost, a dropped connection, a migration) comes
// from the Harness's hooks.
package streamtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

// Harness is one fresh database with herald's schema and a source
// streaming its outbox.
type Harness struct {
	// DB is the fresh database; Dialect its dialect.
	DB      *sql.DB
	Dialect store.Dialect
	// Source streams DB's outbox, its readers configured with the
	// changestream.Config NewHarness was given.
	Source changestream.Source
	// WriteNeighbour commits a transaction that writes a table of DB other
	// than the outbox.
	WriteNeighbour func(t testing.TB)
	// Lose makes the server unable to stream from position (MariaDB: a
	// binlog it purged; PostgreSQL: the slot dropped) and returns the
	// position to open, which the source must report gone.
	Lose func(t testing.TB, position string) string
	// Disconnect ends, on the server, the connections the source's readers
	// stream on, as a network failure or a server's restart would, and
	// returns how many it ended.
	Disconnect func(t testing.TB) int
	// AlterOutbox changes outbox_events as a migration would, the i-th
	// time (from 0): 0 adds a nullable column in the middle of the table
	// where the database can put one there (shifting every later column),
	// else at its end; 1 adds a NOT NULL column with a default at its end.
	AlterOutbox func(t testing.TB, i int)
	// WriteNonTransactional writes, inside tx, a table whose writes a
	// rollback does not undo where the database has one (MariaDB: MyISAM;
	// PostgreSQL has none: an ordinary table).
	WriteNonTransactional func(t testing.TB, tx *sql.Tx)
	// InsertUnchecked drops the outbox's insert trigger (as on a table
	// migrated before it) and inserts row by plain SQL in a transaction of
	// its own. It returns false when the table's own column types or
	// constraints refuse the row: no reader (nor claim) ever meets it.
	InsertUnchecked func(t testing.TB, row Row) bool
	// Quote quotes an identifier in DB's SQL.
	Quote func(name string) string

	// logs holds what the source's readers logged (the suite sets it).
	logs *logBuffer
}

// Row is an outbox row a foreign writer inserts by plain SQL, unchecked:
// aggregate type "order", aggregate sequence 1, event type
// "order.created", payload {}, next_attempt_at and occurred_at the
// database's clock.
type Row struct {
	ID, AggregateID string
	SchemaVersion   int
	// Headers is the headers column's JSON text, "" for NULL.
	Headers string
}

// NewHarness makes a Harness on a fresh database for one test, the
// source's readers configured with cfg (as binlog.Config and wal.Config
// embed it).
type NewHarness func(t testing.TB, cfg changestream.Config) Harness

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
		// config adjusts the suite's reader configuration for the test.
		config func(*changestream.Config)
		fn     func(t *testing.T, h Harness)
	}{
		{"CommitOrder", nil, testCommitOrder},
		{"RollbacksNeverDelivered", nil, testRollbacks},
		{"Savepoints", nil, testSavepoints},
		{"TransactionLargerThanAChunk", nil, testLargeTransaction},
		{"HeartbeatsOnAnIdleOutbox", nil, testHeartbeats},
		{"ReopenResumesRightAfterThePosition", nil, testReopen},
		{"HeadLiesAfterEndedTransactions", nil, testHead},
		{"LostPositionIsGone", nil, testGone},
		{"ForeignPositionIsGone", nil, testForeign},
		{"Reached", nil, testReached},
		{"EventsAreWhatTheClaimReturns", nil, testGolden},
		{"SchemaChangeMidStream", nil, testSchemaChange},
		{"UndecodableRowIsAnEventWithADefect", nil, testUndecodable},
		{"Lag", nil, testLag},
		{"CloseUnblocksNext", func(c *changestream.Config) { c.HeartbeatPeriod = time.Hour }, testCloseUnblocksNext},
		{"ReconnectAfterLostConnection", nil, testReconnect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuffer{}
			// A quick heartbeat, lag and reconnection, so that waits are short.
			cfg := changestream.Config{ChunkEvents: chunk, HeartbeatPeriod: 100 * time.Millisecond,
				LagInterval: 100 * time.Millisecond, ReconnectBackoffBase: 10 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(logs, nil))}
			if tt.config != nil {
				tt.config(&cfg)
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the readers' logs:\n%s", logs)
				}
			})
			h := newHarness(t, cfg)
			h.logs = logs
			tt.fn(t, h)
		})
	}
}

// logBuffer is an io.Writer for a logger, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stream is an open reader and what it has handed out so far.
type stream struct {
	t testing.TB
	r changestream.Reader
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
func (s *stream) next() changestream.Tx {
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
func (s *stream) untilEvents() changestream.Tx {
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
	sw, ok := h.Source.(changestream.Sweeper)
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
// changestream.ErrPositionGone, from Open or from the reader.
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
	if !errors.Is(err, changestream.ErrPositionGone) {
		t.Fatalf("opening at the lost position %s: %v, want changestream.ErrPositionGone", gone, err)
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

// testSavepoints: a savepoint inside a transaction does not end it, and
// events rolled back to a savepoint are not returned, even when a
// non-transactional write after the savepoint keeps them in the server's
// log (MariaDB then logs them, followed by ROLLBACK TO).
func testSavepoints(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	add := func(tx *sql.Tx) string {
		t.Helper()
		return w.add(tx, w.events("sp", 1))[0]
	}
	for _, tc := range []struct {
		name                       string
		nonTransactional, rollback bool
	}{
		{"released", false, false},
		{"rolled back", false, true},
		{"rolled back after a non-transactional write", true, true},
	} {
		tx := w.begin()
		want := []string{add(tx)}
		exec(t, tx, "SAVEPOINT s1")
		if tc.nonTransactional {
			h.WriteNonTransactional(t, tx)
		}
		second := add(tx)
		exec(t, tx, "SAVEPOINT "+h.Quote("s 2"))
		third := add(tx)
		if tc.rollback {
			exec(t, tx, "ROLLBACK TO SAVEPOINT s1")
		} else {
			exec(t, tx, "RELEASE SAVEPOINT s1")
			want = append(want, second, third)
		}
		want = append(want, add(tx))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		events, _ := s.whole()
		sameIDs(t, tc.name, ids(events), want)
	}
	expectQuiet(t, s, 300*time.Millisecond)
}

// testForeign: text that is not one of the source's positions (another
// source's checkpoint) is changestream.ErrPositionGone at Open, so the
// relay sweeps rather than stopping; Reached refuses it.
func testForeign(t *testing.T, h Harness) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	for _, text := range []string{"not a position", "other-source:0/16B3748"} {
		r, err := h.Source.Open(ctx, text)
		if err == nil {
			r.Close()
			t.Fatalf("opened at %q", text)
		}
		if !errors.Is(err, changestream.ErrPositionGone) {
			t.Errorf("opening at %q: %v, want changestream.ErrPositionGone", text, err)
		}
	}
}

// goldenEvents are events whose bytes are easy to get wrong: unicode,
// escapes, nesting, formatting the server must keep, headers, explicit
// times, and a payload of about 1 MiB.
func goldenEvents() []outbox.Event {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, (outbox.MaxPayloadBytesDefault-64)*3/4)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	large := `{"blob":"` + base64.StdEncoding.EncodeToString(raw) + `"}`
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("UTC+8", 8*3600))
	ev := func(agg, typ, payload string, headers map[string]string) outbox.Event {
		return outbox.Event{AggregateType: "order", AggregateID: agg, EventType: typ, SchemaVersion: 3,
			Payload: json.RawMessage(payload), Headers: headers}
	}
	// Each transaction's events (the first three, the last three) in
	// aggregate order: the writer inserts an Add's events in that order
	// (W1's lock order), so the stream's order is the list's.
	events := []outbox.Event{
		ev("ağg-✓-東京", "order.created", `{"name":"Zoë 東京 🚀","note":"naïve café","rtl":"مرحبا"}`, nil),
		ev("esc", "order.escaped", `{"q":"he said \"hi\"\n\ttab","path":"C:\\dir\\f","nul":"\u0000","ctl":"\u001f","html":"</script><b>&amp;","u":"\ud83d\ude80"}`,
			map[string]string{"content-type": "application/json; charset=\"utf-8\"", "x-unicode": "ü→✓", "empty": ""}),
		ev("nested", "order.nested", `{"a":{"b":[1,2,{"c":null,"d":true,"e":-0.5e-10}],"f":{}},"g":[],"h":12345678901234567890}`,
			map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
		ev("large", "order.large", large, map[string]string{"size": "1MiB"}),
		ev("nested", "order.second", `{"seq":2}`, nil),
		ev("spaces", "order.formatted", "{ \"kept\" :\t[ 1 , 2 ] ,\n  \"as\" : \"written\" }\n", nil),
	}
	events[0].OccurredAt = at
	events[2].SchemaVersion = 65535
	return events
}

// testGolden: an event read from the stream is exactly what the polling
// path's claim returns for the same row, field by field; only Attempts
// differs (the claim counts itself).
func testGolden(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	events := goldenEvents()
	want := w.commit(events[:3])
	want = append(want, w.commit(events[3:])...)

	got := readEvents(t, s, len(want))
	sameIDs(t, "stream order", ids(got), want)
	claimed := claimAll(t, h)
	if len(claimed) != len(want) {
		t.Fatalf("claimed %d events, want %d", len(claimed), len(want))
	}
	st := store.New(h.DB, h.Dialect)
	for i, g := range got {
		c := claimed[g.ID]
		if g.Attempts != 0 || c.Attempts != 1 {
			t.Errorf("event %d: attempts stream %d, claim %d; want 0 and 1", i, g.Attempts, c.Attempts)
		}
		c.Attempts = 0
		compareEvents(t, i, g, c)
		shown, err := st.ShowEvent(context.Background(), g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(shown.Payload) != string(g.Payload) {
			t.Errorf("event %d: payload differs from ShowEvent's", i)
		}
		if string(g.Payload) != string(events[i].Payload) {
			t.Errorf("event %d: payload is not the bytes written", i)
		}
	}
	if got[0].OccurredAt.Location() != time.UTC || !got[0].OccurredAt.Equal(events[0].OccurredAt.Truncate(time.Microsecond)) {
		t.Errorf("occurred_at %v, want %v in UTC", got[0].OccurredAt, events[0].OccurredAt.Truncate(time.Microsecond))
	}
	if n := len(got[3].Payload); n < outbox.MaxPayloadBytesDefault-100 {
		t.Errorf("large payload is %d bytes", n)
	}
}

// testSchemaChange: a migration adding a column to outbox_events (in the
// middle of the table, shifting every later column, where the database
// can) while the stream runs changes nothing in what it returns.
func testSchemaChange(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	before := w.commit(append(w.events("a", 1), w.events("b", 1)...))
	h.AlterOutbox(t, 0)
	after := w.commit(goldenEvents()[:3])
	h.AlterOutbox(t, 1)
	last := w.commit(w.events("a", 1))

	got := readEvents(t, s, len(before)+len(after)+len(last))
	sameIDs(t, "stream", ids(got), append(append(before, after...), last...))
	claimed := claimAll(t, h)
	for i, g := range got {
		c := claimed[g.ID]
		c.Attempts = 0
		compareEvents(t, i, g, c)
	}
}

// testUndecodable: rows a foreign writer got wrong (inserted by plain
// SQL; outbox.Writer refuses each, and so does the table's trigger: they
// are written with it dropped, as on a table migrated before it) come out
// of the stream as events whose Defect names the column, exactly as the
// polling path's claim decodes them, and the stream goes on past them:
// the relay quarantines such an event, nothing stops. A row the table's
// own types refuse (PostgreSQL's uuid id) is left out: no reader meets it.
func testUndecodable(t *testing.T, h Harness) {
	s := open(t, h, startHead(t, h))
	bad := []struct {
		name, column string
		row          Row
	}{
		{"header value not a string", "headers", Row{"0190f1c2-7d3e-7a41-8c55-000000000001", "x1", 1, `{"n":1}`}},
		{"headers not an object", "headers", Row{"0190f1c2-7d3e-7a41-8c55-000000000002", "x2", 1, `[1]`}},
		{"NUL in a header value", "headers", Row{"0190f1c2-7d3e-7a41-8c55-000000000003", "x3", 1, `{"n":"a\u0000"}`}},
		{"id not a UUID", "id", Row{"not-a-uuid", "x4", 1, `{"n":"1"}`}},
		{"schema version 0", "schema_version", Row{"0190f1c2-7d3e-7a41-8c55-000000000005", "x5", 0, `{"n":"1"}`}},
		{"empty aggregate id", "aggregate_id", Row{"0190f1c2-7d3e-7a41-8c55-000000000006", "", 1, `{"n":"1"}`}},
	}
	var taken []int
	for i, b := range bad {
		if h.InsertUnchecked(t, b.row) {
			taken = append(taken, i)
		} else {
			t.Logf("%s: the table refuses the row", b.name)
		}
	}
	if len(taken) == 0 {
		t.Fatal("the table refused every bad row: nothing to stream")
	}
	after := Row{ID: "0190f1c2-7d3e-7a41-8c55-000000000007", AggregateID: "after", SchemaVersion: 1}
	if !h.InsertUnchecked(t, after) {
		t.Fatalf("the table refused the good row %+v", after)
	}
	got := readEvents(t, s, len(taken)+1)
	claimed := claimAll(t, h)
	for i, j := range taken {
		b, g := bad[j], got[i]
		if g.ID != b.row.ID || g.Defect == nil || g.Defect.Column != b.column {
			t.Errorf("%s: streamed event %s with defect %+v, want %s with a defect of column %s", b.name, g.ID, g.Defect, b.row.ID, b.column)
			continue
		}
		c, ok := claimed[g.ID]
		if !ok {
			t.Errorf("%s: the claim did not return the event", b.name)
			continue
		}
		c.Attempts = 0
		compareEvents(t, i, g, c)
	}
	if last := got[len(taken)]; last.ID != after.ID || last.Defect != nil {
		t.Errorf("the event after the bad rows: %s (defect %+v), want %s without one", last.ID, last.Defect, after.ID)
	}
}

// testLag: a reader that has not read what was written is behind by bytes
// and seconds; once it reads on, it reaches the head (0, 0).
func testLag(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	if bytes, _ := s.r.Lag(); bytes < 0 {
		t.Fatalf("lag bytes %d right after Open: want known", bytes)
	}
	want := w.commit(append(w.events("a", 1), w.events("a", 1)...))
	for range 20 {
		w.commit(w.events("b", 1))
	}
	waitFor(t, readTimeout, "lag visible while not reading", func() (bool, string) {
		bytes, seconds := s.r.Lag()
		return bytes > 1000 && seconds >= 0, fmt.Sprintf("lag %d bytes, %.3fs", bytes, seconds)
	})
	events, _ := s.whole()
	sameIDs(t, "first transaction", ids(events), want)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			s.r.Next(ctx)
		}
	}()
	waitFor(t, readTimeout, "the head reached", func() (bool, string) {
		bytes, seconds := s.r.Lag()
		return bytes == 0 && seconds == 0, fmt.Sprintf("lag %d bytes, %.3fs", bytes, seconds)
	})
}

// testCloseUnblocksNext: Close makes a blocked Next return
// changestream.ErrClosed (the heartbeat period is an hour: no heartbeat
// returns Next early).
func testCloseUnblocksNext(t *testing.T, h Harness) {
	s := open(t, h, startHead(t, h))
	done := make(chan error, 1)
	go func() {
		for {
			tx, err := s.r.Next(context.Background())
			if err != nil || !tx.IsHeartbeat() {
				done <- err
				return
			}
		}
	}()
	s.r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, changestream.ErrClosed) {
			t.Fatalf("Next after Close: %v, want changestream.ErrClosed", err)
		}
	case <-time.After(readTimeout):
		t.Fatal("Next still blocked after Close")
	}
}

// testReconnect: when the server ends the stream's connection, the reader
// reconnects from the last position it returned and goes on with the
// following transactions, none twice, and logs each reconnection once.
func testReconnect(t *testing.T, h Harness) {
	w := newWriter(t, h)
	s := open(t, h, startHead(t, h))
	first := w.commit(w.events("a", 1))
	events, _ := s.whole()
	sameIDs(t, "before the disconnection", ids(events), first)
	for round := range 2 {
		if n := h.Disconnect(t); n != 1 {
			t.Fatalf("round %d: %d stream connections ended, want 1", round, n)
		}
		after := w.commit(append(w.events("a", 1), w.events("b", 1)...))
		again := w.commit(w.events("a", 1))
		events, _ := s.whole()
		sameIDs(t, fmt.Sprintf("round %d: after the disconnection", round), ids(events), after)
		events, _ = s.whole()
		sameIDs(t, fmt.Sprintf("round %d: then", round), ids(events), again)
	}
	expectQuiet(t, s, 300*time.Millisecond)
	if n := strings.Count(h.logs.String(), "stream reconnected"); n != 2 {
		t.Errorf("%d reconnections logged, want 2", n)
	}
}

// readEvents reads until n events arrived, skipping heartbeats, and
// returns them.
func readEvents(t testing.TB, s *stream, n int) []store.Event {
	t.Helper()
	var events []store.Event
	for len(events) < n {
		events = append(events, s.untilEvents().Events...)
	}
	if len(events) != n {
		t.Fatalf("read %d events, want %d", len(events), n)
	}
	return events
}

// expectQuiet fails t if the stream returns a transaction with events
// within wait: it reads heartbeats (which must come, the heartbeat period
// being short) until wait has passed.
func expectQuiet(t testing.TB, s *stream, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		tx, err := s.r.Next(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if !tx.IsHeartbeat() {
			t.Fatalf("unexpected transaction with events %v", ids(tx.Events))
		}
	}
}

// claimAll claims every ready event of the harness's database through the
// polling path's store (one claim, as a relay owning every bucket) and
// returns them by id.
func claimAll(t testing.TB, h Harness) map[string]store.Event {
	t.Helper()
	st := store.New(h.DB, h.Dialect)
	ctx := context.Background()
	rb, err := st.Rebalance(ctx, store.RebalanceRequest{RelayID: "golden", Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, store.ClaimRequest{Ownership: rb.Ownership, Limit: 100_000, Policy: store.OrderHold})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Event{}
	for _, e := range c.Events {
		out[e.ID] = e
	}
	return out
}

// compareEvents fails t for each field in which got differs from want.
func compareEvents(t testing.TB, i int, got, want store.Event) {
	t.Helper()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for f := 0; f < gv.NumField(); f++ {
		name := gv.Type().Field(f).Name
		g, w := gv.Field(f).Interface(), wv.Field(f).Interface()
		if !reflect.DeepEqual(g, w) {
			t.Errorf("event %d (%s): %s: stream %s, claim %s", i, got.ID, name, short(g), short(w))
		}
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return strings.TrimSpace(string(b))
}

// sameIDs fails t unless got and want hold the same ids in the same order.
func sameIDs(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %d ids %v, want %d ids %v", what, len(got), got, len(want), want)
	}
}

// waitFor calls cond every 25ms until it reports done, and fails t once
// timeout has passed, with cond's last description of the state.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %s", what, timeout, state)
		}
		<-tick.C
	}
}
