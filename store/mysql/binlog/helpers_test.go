package binlog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// nextTimeout bounds one wait for a Tx in tests.
const nextTimeout = 30 * time.Second

type env struct {
	db     *testenv.Database
	writer *outbox.Writer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: testenv.NewHeraldDatabase(t), writer: w}
}

// write commits events in one transaction and returns their ids.
func (e *env) write(t testing.TB, events ...outbox.Event) []string {
	t.Helper()
	return testenv.AddEvents(t, e.db.DB, events...)
}

// writeOnce commits events in one transaction, for goroutines other than
// the test's: ids are set once the events were inserted, and err says
// whether the commit is known to have happened.
func writeOnce(ctx context.Context, e *env, events ...outbox.Event) ([]string, error) {
	tx, err := e.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ids, err := e.writer.Add(ctx, tx, events...)
	if err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

// head returns the server's binlog head.
func (e *env) head(t testing.TB) binlog.Position {
	t.Helper()
	p, err := binlog.Head(context.Background(), e.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fileHead returns the server's binlog head as a file position.
func (e *env) fileHead(t testing.TB) binlog.Position {
	t.Helper()
	var file, offset string
	rows, err := e.db.DB.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatal("SHOW MASTER STATUS: no row")
	}
	dest := make([]any, len(cols))
	dest[0], dest[1] = &file, &offset
	for i := 2; i < len(cols); i++ {
		dest[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	p, err := binlog.ParsePosition("file:" + file + ":" + offset)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// config is a reader config for e's database with a quick heartbeat.
func (e *env) config() binlog.Config {
	return binlog.Config{DSN: e.db.DSN, Config: changestream.Config{HeartbeatPeriod: 100 * time.Millisecond,
		LagInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}}
}

// open opens a reader from from, closed when t ends.
func (e *env) open(t testing.TB, from binlog.Position) *binlog.Reader {
	t.Helper()
	return openWith(t, e.db.DB, e.config(), from)
}

// openWith opens a reader from from with cfg, its queries on db (a pool as
// cfg.DSN's user), closed when t ends.
func openWith(t testing.TB, db *sql.DB, cfg binlog.Config, from binlog.Position) *binlog.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nextTimeout)
	defer cancel()
	r, err := binlog.Open(ctx, db, cfg, from)
	if err != nil {
		t.Fatalf("open from %s: %v", from, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// next returns the reader's next Tx, heartbeats included.
func next(t testing.TB, r *binlog.Reader) changestream.Tx {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nextTimeout)
	defer cancel()
	tx, err := r.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return tx
}

// nextEvents returns the reader's next transaction with events, skipping
// heartbeats.
func nextEvents(t testing.TB, r *binlog.Reader) changestream.Tx {
	t.Helper()
	deadline := time.Now().Add(nextTimeout)
	for time.Now().Before(deadline) {
		if tx := next(t, r); !tx.IsHeartbeat() {
			return tx
		}
	}
	t.Fatalf("no transaction with events within %v", nextTimeout)
	return changestream.Tx{}
}

// readEvents reads transactions until n events arrived and returns them.
func readEvents(t testing.TB, r *binlog.Reader, n int) ([]changestream.Tx, []store.Event) {
	t.Helper()
	var txs []changestream.Tx
	var events []store.Event
	for len(events) < n {
		tx := nextEvents(t, r)
		txs = append(txs, tx)
		events = append(events, tx.Events...)
	}
	if len(events) != n {
		t.Fatalf("read %d events, want %d", len(events), n)
	}
	return txs, events
}

// ids returns the events' ids.
func ids(events []store.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// expectQuiet fails t if r returns a transaction with events within wait:
// it reads heartbeats (which must come, the heartbeat period being short)
// until wait has passed.
func expectQuiet(t testing.TB, r *binlog.Reader, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		tx, err := r.Next(ctx)
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

// lastGTIDSeq returns the sequence number of the MariaDB GTID the session
// of conn committed last.
func lastGTIDSeq(t testing.TB, conn *sql.Conn) (domain, seq uint64) {
	t.Helper()
	var gtid string
	if err := conn.QueryRowContext(context.Background(), "SELECT @@SESSION.last_gtid").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	return parseGTID(t, gtid)
}

func parseGTID(t testing.TB, gtid string) (domain, seq uint64) {
	t.Helper()
	f := strings.Split(gtid, "-")
	if len(f) != 3 {
		t.Fatalf("GTID %q", gtid)
	}
	d, err1 := strconv.ParseUint(f[0], 10, 32)
	n, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("GTID %q", gtid)
	}
	return d, n
}

// positionSeq returns the sequence number of domain in a MariaDB GTID
// position's text p.
func positionSeq(t testing.TB, p string, domain uint64) uint64 {
	t.Helper()
	text, ok := strings.CutPrefix(p, "mariadb-gtid:")
	if !ok {
		t.Fatalf("position %s is not a MariaDB GTID position", p)
	}
	for _, g := range strings.Split(text, ",") {
		if d, seq := parseGTID(t, g); d == domain {
			return seq
		}
	}
	t.Fatalf("position %s has no domain %d", p, domain)
	return 0
}

// payload is an order event with payload {"n":n}.
func orderEvent(agg string, n int) outbox.Event {
	return outbox.Event{AggregateType: "order", AggregateID: agg, EventType: "order.created", SchemaVersion: 1,
		Payload: json.RawMessage(`{"n":` + strconv.Itoa(n) + `}`)}
}

// sameIDs fails t unless got and want hold the same ids in the same order.
func sameIDs(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %d ids %v, want %d ids %v", what, len(got), got, len(want), want)
	}
}
