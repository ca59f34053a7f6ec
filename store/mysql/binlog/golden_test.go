package binlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// TestOnlyCommittedOutboxInserts: a transaction writing a business table
// and events yields only the events; a rolled-back transaction yields
// nothing; updates and deletes of outbox rows, other tables and another
// database's outbox_events are skipped.
func TestOnlyCommittedOutboxInserts(t *testing.T) {
	e := newEnv(t)
	other := newEnv(t)
	db := e.db.DB
	if _, err := db.Exec("CREATE TABLE orders (id INT PRIMARY KEY, total VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	r := e.open(t, e.head(t))
	ctx := context.Background()

	// Business row and events together.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES (1, '199.00')"); err != nil {
		t.Fatal(err)
	}
	together, err := e.writer.Add(ctx, tx, orderEvent("o-1", 1), orderEvent("o-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE orders SET total = '200.00' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Rolled back: never in the binlog.
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES (2, '5.00')"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer.Add(ctx, tx, orderEvent("o-2", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Another database's outbox, updates and deletes of ours, a business
	// row alone.
	other.write(t, orderEvent("elsewhere", 1))
	if _, err := db.Exec("UPDATE outbox_events SET published_at = UTC_TIMESTAMP(6)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM outbox_events WHERE aggregate_seq = 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO orders VALUES (3, '1.00')"); err != nil {
		t.Fatal(err)
	}
	last := e.write(t, orderEvent("o-3", 1))

	first := nextEvents(t, r)
	sameIDs(t, "business transaction", ids(first.Events), together)
	second := nextEvents(t, r)
	sameIDs(t, "next transaction", ids(second.Events), last)
	expectQuiet(t, r, 500*time.Millisecond)
}

// TestHeadThenOpen: a stream opened from Head returns only what committed
// after Head was read.
func TestHeadThenOpen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	conn, err := e.db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer.Add(ctx, tx, orderEvent("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	domain, before := lastGTIDSeq(t, conn)
	head := e.head(t)
	if !head.IsGTID() || !strings.HasPrefix(head.String(), "mariadb-gtid:") {
		t.Fatalf("head %s: want a MariaDB GTID position on the stack", head)
	}
	if seq := positionSeq(t, head.String(), domain); seq < before {
		t.Fatalf("head %s does not cover the transaction committed before it (%d)", head, before)
	}
	later := e.write(t, orderEvent("a", 2))
	r := e.open(t, head)
	sameIDs(t, "after head", ids(nextEvents(t, r).Events), later)
	expectQuiet(t, r, 300*time.Millisecond)
}

// TestResumeFromPosition: a reader opened from a Tx's Position returns
// exactly the transactions after it, with GTID and with file positions.
func TestResumeFromPosition(t *testing.T) {
	for _, kind := range []string{"gtid", "file"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			from := e.head(t)
			if kind == "file" {
				from = e.fileHead(t)
			}
			r := e.open(t, from)
			var want [][]string
			for i := range 5 {
				want = append(want, e.write(t, orderEvent("a", i), orderEvent("b", i)))
			}
			var txs []changestream.Tx
			for i := range want {
				tx := nextEvents(t, r)
				sameIDs(t, "first reader", ids(tx.Events), want[i])
				if !strings.HasPrefix(tx.Position, kind) && !(kind == "gtid" && isGTID(t, tx.Position)) {
					t.Fatalf("position %s: want a %s position", tx.Position, kind)
				}
				txs = append(txs, tx)
			}
			r.Close()

			for start := range 3 {
				p, err := binlog.ParsePosition(txs[start].Position) // as stored by the relay
				if err != nil {
					t.Fatal(err)
				}
				resumed := e.open(t, p)
				for i := start + 1; i < len(want); i++ {
					tx := nextEvents(t, resumed)
					sameIDs(t, "resumed after tx "+txs[start].Position, ids(tx.Events), want[i])
					if tx.Position != txs[i].Position {
						t.Errorf("resumed tx %d at %s, first reader at %s", i, tx.Position, txs[i].Position)
					}
				}
				expectQuiet(t, resumed, 300*time.Millisecond)
			}
		})
	}
}

// isGTID reports whether p is the text of a GTID position.
func isGTID(t testing.TB, p string) bool {
	t.Helper()
	pos, err := binlog.ParsePosition(p)
	if err != nil {
		t.Fatal(err)
	}
	return pos.IsGTID()
}
