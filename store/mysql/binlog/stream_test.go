package binlog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	driver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestCommitOrder: one writer's transactions come back in commit order,
// each with its events in insert order; with concurrent writers every
// event comes back once and each aggregate's events in aggregate_seq order
// (which is their commit order).
func TestCommitOrder(t *testing.T) {
	e := newEnv(t)
	r := e.open(t, e.head(t))

	t.Run("one writer", func(t *testing.T) {
		var want [][]string
		for i := range 100 {
			var events []outbox.Event
			for j := range 1 + i%20 {
				events = append(events, orderEvent(fmt.Sprintf("agg-%d", (i+j)%7), i*100+j))
			}
			// In aggregate order, the order the writer inserts an Add's
			// events in (W1's lock order).
			slices.SortStableFunc(events, func(a, b outbox.Event) int { return strings.Compare(a.AggregateID, b.AggregateID) })
			want = append(want, e.write(t, events...))
		}
		for i, w := range want {
			sameIDs(t, fmt.Sprintf("transaction %d", i), ids(nextEvents(t, r).Events), w)
		}
	})

	t.Run("concurrent writers", func(t *testing.T) {
		const writers, txPerWriter, eventsPerTx, aggregates = 4, 50, 10, 13
		var mu sync.Mutex
		written := map[string]bool{}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range txPerWriter {
					var events []outbox.Event
					for j := range eventsPerTx {
						events = append(events, orderEvent(fmt.Sprintf("agg-%d", (w*31+i*7+j)%aggregates), j))
					}
					got, err := writeOnce(context.Background(), e, events...)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, id := range got {
						written[id] = true
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		txs, events := readEvents(t, r, writers*txPerWriter*eventsPerTx)
		if len(txs) != writers*txPerWriter {
			t.Errorf("%d transactions, want %d", len(txs), writers*txPerWriter)
		}
		lastSeq := map[string]uint64{}
		seen := map[string]bool{}
		for _, ev := range events {
			if !written[ev.ID] || seen[ev.ID] {
				t.Fatalf("event %s: written %v, seen before %v", ev.ID, written[ev.ID], seen[ev.ID])
			}
			seen[ev.ID] = true
			// The aggregates were used by "one writer" too: seqs go on from there.
			if prev, ok := lastSeq[ev.AggregateID]; ok && ev.AggregateSeq != prev+1 {
				t.Fatalf("aggregate %s: seq %d after %d", ev.AggregateID, ev.AggregateSeq, prev)
			}
			lastSeq[ev.AggregateID] = ev.AggregateSeq
		}
	})
}

// TestHeartbeatWhileIdle: transactions that write no outbox row move the
// position forward through heartbeats, and a reader resumed from a
// heartbeat's position returns what came after it.
func TestHeartbeatWhileIdle(t *testing.T) {
	e := newEnv(t)
	if _, err := e.db.DB.Exec("CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	head := e.head(t)
	r := e.open(t, head)
	conn, err := e.db.DB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "INSERT INTO orders VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	domain, business := lastGTIDSeq(t, conn)
	if positionSeq(t, head.String(), domain) >= business {
		t.Fatalf("head %s already covers the business write %d", head, business)
	}

	var hb changestream.Tx
	testenv.WaitFor(t, nextTimeout, "a heartbeat past the business write", func() (bool, string) {
		hb = next(t, r)
		if !hb.IsHeartbeat() {
			t.Fatalf("transaction with events %v: none were written", ids(hb.Events))
		}
		return positionSeq(t, hb.Position, domain) >= business, "last heartbeat at " + hb.Position
	})
	if hb.CommitTime.IsZero() {
		t.Error("heartbeat without commit time")
	}

	later := e.write(t, orderEvent("a", 1))
	resumed := e.open(t, parse(t, hb.Position))
	sameIDs(t, "resumed from heartbeat", ids(nextEvents(t, resumed).Events), later)
	sameIDs(t, "first reader", ids(nextEvents(t, r).Events), later)
}

// TestRotation: FLUSH BINARY LOGS between transactions is invisible, with
// GTID and with file positions, and a file position from before the
// rotation resumes into the next file.
func TestRotation(t *testing.T) {
	e := newEnv(t)
	testenv.MariaDBRoot(t, "SELECT 1") // skip early under -short without root access
	gtidReader := e.open(t, e.head(t))
	fileReader := e.open(t, e.fileHead(t))

	var want [][]string
	for i := range 3 {
		want = append(want, e.write(t, orderEvent("a", i)))
		testenv.MariaDBRoot(t, "FLUSH BINARY LOGS")
	}
	want = append(want, e.write(t, orderEvent("a", 3)))

	for _, r := range []*binlog.Reader{gtidReader, fileReader} {
		var positions []string
		for i, w := range want {
			tx := nextEvents(t, r)
			t.Logf("tx of %d events at %q", len(tx.Events), tx.Position)
			sameIDs(t, fmt.Sprintf("transaction %d", i), ids(tx.Events), w)
			positions = append(positions, tx.Position)
		}
		if r != fileReader {
			continue
		}
		if file(positions[0]) == file(positions[len(positions)-1]) {
			t.Fatalf("positions %v: all in one file after three rotations", positions)
		}
		resumed := e.open(t, parse(t, positions[0])) // in the file before the first rotation
		for i, w := range want[1:] {
			tx := nextEvents(t, resumed)
			sameIDs(t, fmt.Sprintf("resumed transaction %d", i+1), ids(tx.Events), w)
			if tx.Position != positions[i+1] {
				t.Errorf("resumed transaction %d at %s, first reader at %s", i+1, tx.Position, positions[i+1])
			}
		}
	}
}

// file returns the binlog file of a file position's text.
func file(p string) string {
	text := strings.TrimPrefix(p, "file:")
	return text[:strings.LastIndexByte(text, ':')]
}

// TestPositionPurged: a position the server does not have is
// changestream.ErrPositionGone, for a missing file and for a GTID the
// binlog never held.
func TestPositionPurged(t *testing.T) {
	e := newEnv(t)
	for _, text := range []string{
		"file:mariadb-bin.000000:4",
		"file:mariadb-bin.999999:4",
		"file:mariadb-bin.000001:4000000000",
		"mariadb-gtid:0-4000000000-1",
	} {
		t.Run(text, func(t *testing.T) {
			p, err := binlog.ParsePosition(text)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), nextTimeout)
			defer cancel()
			r, err := binlog.Open(ctx, e.db.DB, e.config(), p)
			if err == nil {
				r.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, changestream.ErrPositionGone) {
				t.Fatalf("error %v: want changestream.ErrPositionGone", err)
			}
			t.Log(err)
		})
	}
}

// TestXATransactions: an XA transaction committed in one phase is an
// ordinary transaction; the rows of a prepared XA transaction are in the
// binlog before anyone knows whether they commit: the reader keeps them
// and hands them out at the XA COMMIT (at its position), drops them at
// an XA ROLLBACK, and while one is prepared hands out no position past the
// one before it (a reader opened there reads it again).
func TestXATransactions(t *testing.T) {
	e := newEnv(t)
	var logs testenv.LogBuffer
	cfg := e.config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	r := openWith(t, e.db.DB, cfg, e.head(t))
	ctx := context.Background()
	// A session with a prepared XA transaction can do nothing else until it
	// ends: x1 has a connection of its own.
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		c, err := e.db.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	// The trigger takes only UUIDs as ids: each name stands for one.
	idOf := map[string]string{}
	insert := func(c *sql.Conn, name string) {
		t.Helper()
		idOf[name] = uuid.NewString()
		if _, err := c.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
			event_type, schema_version, payload, occurred_at, next_attempt_at)
			VALUES (?, 'order', ?, 1, 'order.created', 1, '{}', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`, idOf[name], name); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(c *sql.Conn, stmts ...string) {
		t.Helper()
		for _, s := range stmts {
			if _, err := c.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	// XA ids are the server's: unique per run.
	x := func(n int) string { return fmt.Sprintf("'%s-x%d'", e.db.Name, n) }
	before := e.head(t)
	exec(conns[0], "XA START "+x(1))
	insert(conns[0], "xa-two-phase")
	exec(conns[0], "XA END "+x(1), "XA PREPARE "+x(1))
	exec(conns[1], "XA START "+x(2))
	insert(conns[1], "xa-one-phase")
	exec(conns[1], "XA END "+x(2), "XA COMMIT "+x(2)+" ONE PHASE")
	exec(conns[0], "XA COMMIT "+x(1))
	exec(conns[1], "XA START "+x(3))
	insert(conns[1], "xa-rolled-back")
	exec(conns[1], "XA END "+x(3), "XA PREPARE "+x(3), "XA ROLLBACK "+x(3))
	last := e.write(t, orderEvent("after", 1))

	oneTx := nextEvents(t, r)
	sameIDs(t, "one-phase XA", ids(oneTx.Events), []string{idOf["xa-one-phase"]})
	twoTx := nextEvents(t, r)
	sameIDs(t, "two-phase XA, at its commit", ids(twoTx.Events), []string{idOf["xa-two-phase"]})
	if reached, err := parse(t, oneTx.Position).Reached(before); err != nil || !reached {
		t.Errorf("position %s (while x1 was prepared) is before %s, taken before x1 began (%v)", oneTx.Position, before, err)
	}
	if reached, err := parse(t, oneTx.Position).Reached(parse(t, twoTx.Position)); err != nil || reached {
		t.Errorf("with x1 prepared, the one-phase transaction's position %s is past x1's commit %s (%v)",
			oneTx.Position, twoTx.Position, err)
	}
	sameIDs(t, "after the XA transactions (x3 rolled back)", ids(nextEvents(t, r).Events), last)

	// Opened at the position handed out while x1 was prepared, a reader
	// reads x1 again.
	again := openWith(t, e.db.DB, cfg, parse(t, oneTx.Position))
	sameIDs(t, "one-phase XA, again", ids(nextEvents(t, again).Events), []string{idOf["xa-one-phase"]})
	sameIDs(t, "two-phase XA, again", ids(nextEvents(t, again).Events), []string{idOf["xa-two-phase"]})
}

// TestUnixSocket: the reader streams over a DSN's unix socket too.
func TestUnixSocket(t *testing.T) {
	e := newEnv(t)
	dsn, err := driver.ParseDSN(e.db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	dsn.Net, dsn.Addr = "unix", localstack.MariaDBSocket
	db, err := mysql.Open(context.Background(), dsn.FormatDSN())
	if err != nil {
		if testing.Short() {
			t.Skipf("skipped under -short: the stack's socket %s: %v", localstack.MariaDBSocket, err)
		}
		t.Fatalf("the stack's socket %s: %v", localstack.MariaDBSocket, err)
	}
	defer db.Close()
	cfg := e.config()
	cfg.DSN = dsn.FormatDSN()
	r := openWith(t, db, cfg, e.head(t)) // the stream and the lag's queries over the socket
	want := e.write(t, orderEvent("socket", 1))
	sameIDs(t, "over the socket", ids(nextEvents(t, r).Events), want)
	if bytes, _ := r.Lag(); bytes < 0 {
		t.Errorf("lag bytes %d over the socket", bytes)
	}
}

// TestLargeTransactionComesInChunks: a transaction of more events than
// ChunkEvents that the binlog says committed whole (MariaDB's
// transactional flag) is handed out in chunks as it is decoded, each
// without a position (none inside a transaction can be resumed from),
// then its end with the position after it; together, every event in
// insert order (docs/design.md, section 9.7).
func TestLargeTransactionComesInChunks(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.ChunkEvents = 100
	r := openWith(t, e.db.DB, cfg, e.head(t))
	events := make([]outbox.Event, 250)
	for i := range events {
		events[i] = orderEvent(fmt.Sprintf("agg-%d", i*7/len(events)), i) // in the writer's insert order: by aggregate
	}
	want := e.write(t, events...)
	var got []string
	chunks := 0
	for {
		tx := next(t, r)
		if len(got) == 0 && tx.IsHeartbeat() {
			continue // before the transaction
		}
		got = append(got, ids(tx.Events)...)
		if tx.Position != "" {
			break // its end (with the last events, or none when the chunks took them all)
		}
		chunks++
		if len(tx.Events) < cfg.ChunkEvents {
			t.Errorf("a chunk of %d events, want at least %d", len(tx.Events), cfg.ChunkEvents)
		}
		if len(got) > len(want) {
			t.Fatalf("%d events read, the transaction has %d", len(got), len(want))
		}
	}
	if chunks < 2 {
		t.Errorf("%d chunks before the transaction's end, want 2 (250 events, 100 a chunk)", chunks)
	}
	sameIDs(t, "the chunks and the end together", got, want)
}

// parse parses a position's text.
func parse(t testing.TB, text string) binlog.Position {
	t.Helper()
	p, err := binlog.ParsePosition(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
