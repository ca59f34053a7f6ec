package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
)

// benchEvent is one event the harness writes: its aggregate, its position
// in the aggregate (from 1, in write order) and its payload, which carries
// both first (see payload).
type benchEvent struct {
	Agg     string
	Seq     int64
	Payload []byte
}

func aggName(i int) string { return fmt.Sprintf("agg-%04d", i) }

// payload is a JSON payload of about size bytes: the aggregate and the
// sequence first (verify reads them), then random base64, which does not
// compress to nothing, as real payloads with ids, names and amounts do not.
func payload(agg string, seq int64, size int, rnd *rand.Rand) []byte {
	head := fmt.Sprintf(`{"agg":%q,"seq":%d,"pad":"`, agg, seq)
	n := max(0, size-len(head)-2)
	raw := make([]byte, n*3/4+3)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	return []byte(head + base64.StdEncoding.EncodeToString(raw)[:n] + `"}`)
}

// Table shapes the peers read.
const (
	heraldTable    = "herald outbox_events"
	watermillTable = "watermill_forwarder_topic (Watermill's own)"
)

// forwarderTopic is the SQL topic Watermill's forwarder listens on (its
// table is watermill_<topic>).
const forwarderTopic = "forwarder_topic"

// writer writes events in one transaction of the writer's database, the
// way an application using that peer would.
type writer interface {
	write(ctx context.Context, events []benchEvent) error
	// close closes the writer's pool.
	close() error
}

// heraldWriter writes herald's outbox_events with herald's own writer (an
// aggregate counter upsert and an insert per event).
type heraldWriter struct {
	db *sql.DB
	w  *outbox.Writer
}

func newHeraldWriter(ctx context.Context, dsn string) (*heraldWriter, error) {
	db, dialect, err := database.Open(ctx, dsn, database.ConnOptions{})
	if err != nil {
		return nil, err
	}
	w, err := outbox.NewWriter(outbox.Config{Dialect: dialect})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &heraldWriter{db: db, w: w}, nil
}

func (h *heraldWriter) close() error { return h.db.Close() }

func (h *heraldWriter) write(ctx context.Context, events []benchEvent) error {
	evs := make([]outbox.Event, len(events))
	for i, e := range events {
		evs[i] = outbox.Event{AggregateType: "order", AggregateID: e.Agg, EventType: "order.updated",
			SchemaVersion: 1, Payload: json.RawMessage(e.Payload)}
	}
	return commitRetryingTransient(ctx, h.db, func(tx *sql.Tx) error {
		_, err := h.w.Add(ctx, tx, evs...)
		return err
	})
}

// watermillWriter writes the way Watermill's outbox documentation shows:
// a watermill-sql MySQL publisher on the transaction, wrapped by the
// forwarder's publisher, which envelopes each message with its Kafka topic
// and stores it in the forwarder's SQL topic.
type watermillWriter struct {
	db    *sql.DB
	topic string // the Kafka topic the forwarder sends to
}

func newWatermillWriter(ctx context.Context, dsn, topic string) (*watermillWriter, error) {
	db, _, err := database.Open(ctx, dsn, database.ConnOptions{})
	if err != nil {
		return nil, err
	}
	return &watermillWriter{db: db, topic: topic}, nil
}

func (w *watermillWriter) close() error { return w.db.Close() }

func (w *watermillWriter) write(ctx context.Context, events []benchEvent) error {
	return commitRetryingTransient(ctx, w.db, func(tx *sql.Tx) error {
		pub, err := wsql.NewPublisher(wsql.TxFromStdSQL(tx), wsql.PublisherConfig{SchemaAdapter: wsql.DefaultMySQLSchema{}}, watermill.NopLogger{})
		if err != nil {
			return err
		}
		msgs := make([]*message.Message, len(events))
		for i, e := range events {
			msgs[i] = message.NewMessage(watermill.NewUUID(), e.Payload)
			msgs[i].Metadata.Set(watermillKeyMetadata, e.Agg)
		}
		fwd := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: forwarderTopic})
		return fwd.Publish(w.topic, msgs...)
	})
}

// watermillKeyMetadata is the message metadata the Kafka publisher's
// partitioning marshaler takes the key from.
const watermillKeyMetadata = "aggregate_id"

// createWatermillTables creates the forwarder's SQL topic and offsets
// tables as watermill-sql's subscriber would (InitializeSchema), so the
// backlog can be loaded before the forwarder starts.
func createWatermillTables(ctx context.Context, db *sql.DB) error {
	params := wsql.SchemaInitializingQueriesParams{Topic: forwarderTopic}
	qs, err := wsql.DefaultMySQLSchema{}.SchemaInitializingQueries(params)
	if err != nil {
		return err
	}
	oqs, err := wsql.DefaultMySQLOffsetsAdapter{}.SchemaInitializingQueries(wsql.OffsetsSchemaInitializingQueriesParams{Topic: forwarderTopic})
	if err != nil {
		return err
	}
	for _, q := range append(qs, oqs...) {
		if _, err := db.ExecContext(ctx, q.Query, q.Args...); err != nil {
			return fmt.Errorf("watermill schema: %w", err)
		}
	}
	return nil
}

// backlogWritten is what a backlog of n events over aggs aggregates holds
// per aggregate: event i is the (i/aggs + 1)-th of aggregate i % aggs.
func backlogWritten(n, aggs int) map[string]int64 {
	w := map[string]int64{}
	for a := range min(n, aggs) {
		w[aggName(a)] = int64(n / aggs)
		if a < n%aggs {
			w[aggName(a)]++
		}
	}
	return w
}

// backlogEvent is event i of the backlog.
func backlogEvent(i, aggs, size int, rnd *rand.Rand) benchEvent {
	agg := aggName(i % aggs)
	seq := int64(i/aggs + 1)
	return benchEvent{Agg: agg, Seq: seq, Payload: payload(agg, seq, size, rnd)}
}

// loadHeraldTemplate fills db (herald's schema) with the backlog using
// multi-row INSERTs (what herald's writer would leave: rows and counters),
// events in the past, in stream order.
func loadHeraldTemplate(ctx context.Context, db *sql.DB, n, aggs, size int) error {
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	base := time.Now().UTC().Add(-time.Hour)
	const rowsPerStmt = 500
	for start := 0; start < n; start += rowsPerStmt {
		end := min(n, start+rowsPerStmt)
		var q strings.Builder
		q.WriteString(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
			schema_version, payload, occurred_at, next_attempt_at) VALUES `)
		args := make([]any, 0, (end-start)*7)
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, 'order', ?, ?, 'order.updated', 1, ?, ?, ?)")
			e := backlogEvent(i, aggs, size, rnd)
			at := base.Add(time.Duration(i) * time.Microsecond)
			args = append(args, newEventID(), e.Agg, e.Seq, e.Payload, at, at)
		}
		if _, err := db.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("load backlog: %w", err)
		}
	}
	_, err := db.ExecContext(ctx, `INSERT INTO outbox_aggregates (aggregate_type, aggregate_id, last_seq)
		SELECT aggregate_type, aggregate_id, MAX(aggregate_seq) FROM outbox_events GROUP BY aggregate_type, aggregate_id`)
	return err
}

// loadWatermillTemplate fills db's forwarder table with the backlog through
// the forwarder's publisher, 500 messages per transaction, addressed to
// templateTopic (copyBacklog readdresses them).
func loadWatermillTemplate(ctx context.Context, dsn string, n, aggs, size int) error {
	w, err := newWatermillWriter(ctx, dsn, templateTopic)
	if err != nil {
		return err
	}
	defer w.close()
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	const perTx = 500
	for start := 0; start < n; start += perTx {
		var events []benchEvent
		for i := start; i < min(n, start+perTx); i++ {
			events = append(events, backlogEvent(i, aggs, size, rnd))
		}
		if err := w.write(ctx, events); err != nil {
			return fmt.Errorf("load backlog: %w", err)
		}
	}
	return nil
}

// templateTopic is the destination the Watermill template's envelopes
// carry until copyBacklog replaces it with a run's topic.
const templateTopic = "herald-bench-template-topic"

// copyBacklog copies the template database's backlog into db, server-side,
// so every drain starts from the same rows without sending 100 MB again.
func copyBacklog(ctx context.Context, db *sql.DB, table, template, topic string) error {
	var stmts []string
	if table == heraldTable {
		stmts = []string{
			"INSERT INTO outbox_events SELECT * FROM " + template + ".outbox_events",
			"INSERT INTO outbox_aggregates SELECT * FROM " + template + ".outbox_aggregates",
		}
	} else {
		stmts = []string{"INSERT INTO watermill_" + forwarderTopic + " SELECT `offset`, uuid, created_at, " +
			"REPLACE(payload, '\"" + templateTopic + "\"', '\"" + topic + "\"'), metadata FROM " + template + ".watermill_" + forwarderTopic}
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("copy backlog: %w", err)
		}
	}
	return nil
}

// ownedAggregates is what one of several concurrent writers writes:
// writer w of n owns the aggregates a with a % n == w, takes them in turn,
// and numbers each one's events from 1 in its write order (a writer owns
// its aggregates, so their order is its order).
type ownedAggregates struct {
	first, step, aggs int
	next              int
	seq               map[string]int64
}

func newOwnedAggregates(w, writers, aggs int) *ownedAggregates {
	return &ownedAggregates{first: w, step: writers, aggs: aggs, next: w, seq: map[string]int64{}}
}

// batch is the next n events: consecutive aggregates of the writer's own,
// payloads of about size bytes.
func (o *ownedAggregates) batch(n, size int, rnd *rand.Rand) []benchEvent {
	events := make([]benchEvent, n)
	for i := range events {
		agg := aggName(o.next)
		if o.next += o.step; o.next >= o.aggs {
			o.next = o.first
		}
		o.seq[agg]++
		events[i] = benchEvent{Agg: agg, Seq: o.seq[agg], Payload: payload(agg, o.seq[agg], size, rnd)}
	}
	return events
}

// openWriters opens n writers with newWriter; on failure it closes those
// already open.
func openWriters(n int, newWriter func() (writer, error)) ([]writer, error) {
	ws := make([]writer, 0, n)
	for range n {
		w, err := newWriter()
		if err != nil {
			closeWriters(ws)
			return nil, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func closeWriters(ws []writer) {
	for _, w := range ws {
		w.close()
	}
}

// sustainedWriters write as fast as they can until ctx ends, each
// transaction perTx events of the writer's own aggregates
// (ownedAggregates). It returns what was committed, per aggregate (events
// 1..n), and how many events.
func sustainedWriters(ctx context.Context, newWriter func() (writer, error), writers, perTx, aggs, size int) (map[string]int64, int, error) {
	ws, err := openWriters(writers, newWriter)
	if err != nil {
		return nil, 0, err
	}
	defer closeWriters(ws)
	var (
		mu       sync.Mutex
		written  = map[string]int64{}
		total    int
		firstErr error
		wg       sync.WaitGroup
	)
	for wr, w := range ws {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(wr), 7))
			own := newOwnedAggregates(wr, writers, aggs)
			for ctx.Err() == nil {
				events := own.batch(perTx, size, rnd)
				if err := w.write(ctx, events); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				for _, e := range events {
					written[e.Agg] = max(written[e.Agg], e.Seq)
				}
				total += len(events)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return written, total, firstErr
}

// steadyWriters write rate events per second for d, spread over writers
// goroutines (one commit takes longer than the interval one writer would
// need), each on its own ticker with perTx events per transaction of the
// aggregates it owns (ownedAggregates), and return when each event's
// commit returned (the writer's clock right after COMMIT).
func steadyWriters(ctx context.Context, newWriter func() (writer, error), writers, rate, perTx, aggs, size int, d time.Duration) (map[string]int64, map[eventKey]time.Time, error) {
	ws, err := openWriters(writers, newWriter)
	if err != nil {
		return nil, nil, err
	}
	defer closeWriters(ws)
	var (
		mu        sync.Mutex
		written   = map[string]int64{}
		committed = map[eventKey]time.Time{}
		firstErr  error
		wg        sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	interval := time.Second * time.Duration(perTx*writers) / time.Duration(rate)
	for wr, w := range ws {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(3, uint64(wr)))
			own := newOwnedAggregates(wr, writers, aggs)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for time.Now().Before(deadline) {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				events := own.batch(perTx, size, rnd)
				if err := w.write(ctx, events); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				now := time.Now()
				mu.Lock()
				for _, e := range events {
					committed[eventKey{e.Agg, e.Seq}] = now
					written[e.Agg] = max(written[e.Agg], e.Seq)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return written, committed, firstErr
}

// newEventID is a time-ordered UUID, as herald's writer makes.
func newEventID() string { return uuid.Must(uuid.NewV7()).String() }

// commitRetryingTransient runs a writer's transaction again when the
// server rolled it back for a reason that passes (mysql.Dialect's
// IsTransient: chiefly a deadlock victim or a lock wait timeout), as an
// application would (nothing was committed). The reference loop's claim,
// which locks the whole ready range at REPEATABLE READ, makes writers
// deadlock with it.
func commitRetryingTransient(ctx context.Context, db *sql.DB, fill func(*sql.Tx) error) error {
	for {
		err := commit(ctx, db, fill)
		if err == nil || !(mysql.Dialect{}).IsTransient(err) || ctx.Err() != nil {
			return err
		}
		writerRetries.Add(1)
	}
}

// commit runs fill in a transaction of db and commits it, or rolls it back
// when fill fails.
func commit(ctx context.Context, db *sql.DB, fill func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fill(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// writerRetries counts the transactions writers restarted.
var writerRetries atomic.Int64
