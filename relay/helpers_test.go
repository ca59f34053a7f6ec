package relay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// env is what a relay test runs against: a fresh database with herald's
// schema and a fresh topic that aggregate type "order" is routed to.
type env struct {
	db      *testenv.Database
	brokers []string
	topic   string
	writer  *outbox.Writer
	// foreign: write writes Debezium's way, into a foreign outbox table
	// herald copies (mapForeignTable).
	foreign bool
}

func newEnv(t *testing.T, topic testenv.TopicOptions) *env {
	t.Helper()
	return newEnvOn(t, testenv.MariaDB, topic)
}

// newEnvOn is newEnv on a database of server. The tests that prove the
// relay's guarantees run on each server (testenv.OnEachServer) with the
// same checks; the others stay on MariaDB, the relay's logic being the
// same Go over either dialect.
func newEnvOn(t *testing.T, server testenv.Server, topic testenv.TopicOptions) *env {
	t.Helper()
	brokers := testenv.KafkaBrokers(t)
	db := testenv.NewHeraldDatabaseOn(t, server)
	w, err := outbox.NewWriter(outbox.Config{Dialect: db.Dialect})
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: db, brokers: brokers, topic: testenv.NewTopic(t, brokers, topic), writer: w}
}

// relay starts a `herald relay` process on e's database and topic.
func (e *env) relay(t *testing.T, opts testenv.RelayOptions) *testenv.Process {
	t.Helper()
	opts.DSN, opts.Brokers = e.db.DSN, e.brokers
	if opts.Topics == nil {
		opts.Topics = map[string]string{"order": e.topic}
	}
	return testenv.StartRelay(t, opts)
}

// event is a small order event of aggregate agg.
func event(agg string, n int) outbox.Event {
	return outbox.Event{
		AggregateType: "order", AggregateID: agg, EventType: "order.updated", SchemaVersion: 1,
		Payload: json.RawMessage(fmt.Sprintf(`{"order_id":%q,"n":%d,"total_amount":"19.99"}`, agg, n)),
	}
}

// write adds events in one transaction and commits it (or rolls it back)
// and returns their ids.
func (e *env) write(ctx context.Context, commit bool, events ...outbox.Event) ([]string, error) {
	tx, err := e.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var ids []string
	if e.foreign {
		ids, err = writeForeign(ctx, tx, events)
	} else {
		ids, err = e.writer.Add(ctx, tx, events...)
	}
	if err != nil {
		return nil, err
	}
	if !commit {
		return ids, tx.Rollback()
	}
	return ids, tx.Commit()
}

// foreignOutboxDDL is Debezium's outbox table.
const foreignOutboxDDL = `CREATE TABLE outbox (id CHAR(36) NOT NULL PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
	aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON)`

// mapForeignTable gives e's database Debezium's outbox table, has herald
// copy its inserts, and makes write write there (docs/design.md, section
// 10).
func (e *env) mapForeignTable(t *testing.T) {
	t.Helper()
	e.db.Exec(t, foreignOutboxDDL)
	if err := migrations.InstallMapping(context.Background(), e.db.DB, migrations.Mapping{Table: "outbox"}); err != nil {
		t.Fatal(err)
	}
	e.foreign = true
}

// writeForeign writes events as a writer of Debezium's habit does: each
// into the foreign outbox table, then deleted in the same transaction, so
// only the binlog and herald's copy keep it.
func writeForeign(ctx context.Context, tx *sql.Tx, events []outbox.Event) ([]string, error) {
	ids := make([]string, len(events))
	for i, ev := range events {
		ids[i] = uuid.NewString()
		if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)",
			ids[i], ev.AggregateType, ev.AggregateID, ev.EventType, string(ev.Payload)); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM outbox WHERE id = ?", ids[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// preload commits n events spread round-robin over aggregates, 1,000 per
// transaction.
func (e *env) preload(t *testing.T, n, aggregates int) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += 1000 {
		var batch []outbox.Event
		for i := start; i < min(n, start+1000); i++ {
			batch = append(batch, event(aggName(i%aggregates), i))
		}
		if _, err := e.write(ctx, true, batch...); err != nil {
			t.Fatalf("preload: %v", err)
		}
	}
}

func aggName(i int) string { return fmt.Sprintf("agg-%04d", i) }

// liveWriter adds events while relays drain: small transactions of random
// aggregates, every fourth one rolled back, until it committed target
// events or ctx ends.
type liveWriter struct {
	// stop ends the writing before the target (what is committed stays).
	stop       context.CancelFunc
	mu         sync.Mutex
	committed  int
	rolledBack []string
	err        error
	done       chan struct{}
}

func (e *env) startLiveWriter(ctx context.Context, aggregates, target int) *liveWriter {
	ctx, stop := context.WithCancel(ctx)
	lw := &liveWriter{done: make(chan struct{}), stop: stop}
	go func() {
		defer close(lw.done)
		tick := time.NewTicker(5 * time.Millisecond) // a steady trickle, not a burst
		defer tick.Stop()
		for tx := 0; ; tx++ {
			lw.mu.Lock()
			enough := lw.committed >= target
			lw.mu.Unlock()
			if enough {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var batch []outbox.Event
			for i := range 1 + rand.IntN(5) {
				batch = append(batch, event(aggName(rand.IntN(aggregates)), 1_000_000+tx*10+i))
			}
			commit := tx%4 != 3
			ids, err := e.write(context.WithoutCancel(ctx), commit, batch...) // a stop comes between transactions
			lw.mu.Lock()
			switch {
			case err != nil:
				lw.err = err
			case commit:
				lw.committed += len(ids)
			default:
				lw.rolledBack = append(lw.rolledBack, ids...)
			}
			lw.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return lw
}

// wait waits for the writer to finish and fails t if it failed.
func (lw *liveWriter) wait(t *testing.T) (committed int, rolledBack []string) {
	t.Helper()
	<-lw.done
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil {
		t.Fatalf("live writer: %v", lw.err)
	}
	return lw.committed, lw.rolledBack
}

// waitDrained waits until no committed event is left unpublished.
func (e *env) waitDrained(t *testing.T, timeout time.Duration) {
	t.Helper()
	testenv.WaitFor(t, timeout, "every event published", func() (bool, string) {
		n := e.unpublished(t)
		return n == 0, fmt.Sprintf("%d unpublished", n)
	})
}

// unpublished counts the events not published yet, by the store's rule: a
// change stream's untouched rows count until its watermark passes them
// (docs/design.md, section 9.4).
func (e *env) unpublished(t *testing.T) int64 {
	t.Helper()
	n, err := e.db.Store().CountUnpublished(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// published reads which events are published, with the verifier's own SQL.
func (e *env) published(t *testing.T) map[string]bool {
	t.Helper()
	rows, err := verify.LoadOutbox(context.Background(), e.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range rows {
		if r.Published {
			out[r.ID] = true
		}
	}
	return out
}

// verifyTopic reads the topic with kcat and checks it against the outbox:
// the rows keep selects must be on the topic, in order per aggregate, and
// the events in absent must not be. It fails t on any problem and logs the
// duplicate count.
func (e *env) verifyTopic(t *testing.T, keep func(verify.Row) bool, absent []string) *verify.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := verify.LoadOutbox(ctx, e.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	records, err := verify.ReadTopic(ctx, e.brokers, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	report := verify.Check(verify.Input{Committed: verify.Events(rows, keep), RolledBack: absent, Records: records})
	t.Logf("independent check (kcat): %s", report.Summary())
	if !report.OK() {
		t.Errorf("topic %s does not match the outbox:\n%s", e.topic, strings.Join(report.Problems(10), "\n"))
	}
	return report
}

// stop sends SIGTERM to each relay and expects a clean exit.
func stop(t *testing.T, relays ...*testenv.Process) {
	t.Helper()
	for _, p := range relays {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range relays {
		if exit := p.Wait(t, 30*time.Second); exit.Code != 0 {
			t.Errorf("%s: %v after SIGTERM, want exit status 0; log tail:\n%s", p.Name, exit, p.Tail(20))
		}
	}
}
