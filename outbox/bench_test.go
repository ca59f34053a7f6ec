package outbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
)

// The write path's cost, on the real MariaDB (docs/benchmarks.md, "Write
// path"). Figures, not assertions:
//
//	go test -run '^$' -bench . -count 6 ./outbox/
//
// Every transaction is durable as the stack configures it
// (innodb_flush_log_at_trx_commit=1, sync_binlog=1), so a commit costs an
// fsync or two; the question is how much an event adds to that.

// benchOrdersDDL is a business table shaped like the orders example's.
const benchOrdersDDL = `CREATE TABLE bench_orders (
	id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	customer_id BIGINT NOT NULL,
	status VARCHAR(16) NOT NULL,
	total_amount DECIMAL(15,2) NOT NULL,
	created_at DATETIME(6) NOT NULL,
	updated_at DATETIME(6) NOT NULL
) ENGINE=InnoDB`

type benchEnv struct {
	db *sql.DB
	// dbPrepared is the same database without interpolateParams: every
	// statement with arguments is a prepare, an execute and a close.
	dbPrepared *sql.DB
	w          *outbox.Writer
}

func newBenchEnv(b *testing.B) benchEnv {
	b.Helper()
	d := testenv.NewHeraldDatabase(b)
	if _, err := d.DB.Exec(benchOrdersDDL); err != nil {
		b.Fatal(err)
	}
	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		b.Fatal(err)
	}
	cfg.InterpolateParams = false
	prepared, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { prepared.Close() })
	return benchEnv{db: d.DB, dbPrepared: prepared, w: w}
}

// orderPayload is an order.created payload of about size bytes: the order
// example's shape, with as many items as it takes.
func orderPayload(orderID int64, size int) json.RawMessage {
	type item struct {
		SKU       string `json:"sku"`
		Quantity  int    `json:"quantity"`
		UnitPrice string `json:"unit_price"`
	}
	p := struct {
		OrderID     int64  `json:"order_id"`
		CustomerID  int64  `json:"customer_id"`
		Items       []item `json:"items"`
		TotalAmount string `json:"total_amount"`
	}{OrderID: orderID, CustomerID: 42, TotalAmount: "199.00"}
	for {
		b, _ := json.Marshal(p)
		if len(b) >= size {
			return b
		}
		p.Items = append(p.Items, item{SKU: fmt.Sprintf("SKU-%06d", len(p.Items)), Quantity: 2, UnitPrice: "9.99"})
	}
}

// txShape is what one benchmarked transaction writes.
type txShape struct {
	name string
	// payloadBytes is the size of each event (0: the business row only).
	payloadBytes int
	// events per transaction, of aggregates aggregates.
	events, aggregates int
	// rawInsert writes the event row with a plain INSERT and no sequence
	// counter: not a mode herald offers, only the split of the writer's cost
	// between the event row and the aggregate counter.
	rawInsert bool
	// noops are statements that do nothing ("DO 0"): the price of a round
	// trip to the server inside the transaction, for comparison.
	noops int
	// prepared runs the transaction on benchEnv.dbPrepared.
	prepared bool
}

// run writes one business row and the shape's events in one transaction.
func (e benchEnv) run(ctx context.Context, s txShape) error {
	db := e.db
	if s.prepared {
		db = e.dbPrepared
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx,
		"INSERT INTO bench_orders (customer_id, status, total_amount, created_at, updated_at) VALUES (?, 'created', ?, NOW(6), NOW(6))",
		42, "199.00")
	if err != nil {
		return err
	}
	orderID, err := res.LastInsertId()
	if err != nil {
		return err
	}
	for range s.noops {
		if _, err := tx.ExecContext(ctx, "DO 0"); err != nil {
			return err
		}
	}
	switch {
	case s.events == 0:
	case s.rawInsert:
		id, _ := uuid.NewV7()
		if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
			event_type, schema_version, payload, headers, occurred_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NOW(6))`,
			id.String(), "order", strconv.FormatInt(orderID, 10), 1, "order.created", 1,
			string(orderPayload(orderID, s.payloadBytes)), nil, time.Now().UTC()); err != nil {
			return err
		}
	default:
		events := make([]outbox.Event, s.events)
		payload := orderPayload(orderID, s.payloadBytes)
		for i := range events {
			agg := orderID
			if s.aggregates > 1 {
				agg = orderID*1000 + int64(i%s.aggregates)
			}
			events[i] = outbox.Event{AggregateType: "order", AggregateID: strconv.FormatInt(agg, 10),
				EventType: "order.created", SchemaVersion: 1, Payload: payload}
		}
		if _, err := e.w.Add(ctx, tx, events...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkWritePath: one business row per transaction, without and with its
// outbox event, and batched adds of 100 events per transaction. Besides
// ns/op it reports the ROW binlog bytes one transaction writes (the smallest
// of several samples: the binlog is server-wide, so other clients' writes
// can only add to a sample).
func BenchmarkWritePath(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	for _, s := range []txShape{
		{name: "order_only"},
		{name: "order+2_noop_round_trips", noops: 2},
		{name: "order+event_256B", payloadBytes: 256, events: 1, aggregates: 1},
		{name: "order+event_1KiB", payloadBytes: 1024, events: 1, aggregates: 1},
		{name: "order+raw_insert_1KiB_no_counter", payloadBytes: 1024, events: 1, aggregates: 1, rawInsert: true},
		{name: "order_only_no_interpolate", prepared: true},
		{name: "order+event_1KiB_no_interpolate", payloadBytes: 1024, events: 1, aggregates: 1, prepared: true},
		{name: "batch_100_events_1_aggregate", payloadBytes: 256, events: 100, aggregates: 1},
		{name: "batch_100_events_100_aggregates", payloadBytes: 256, events: 100, aggregates: 100},
	} {
		b.Run(s.name, func(b *testing.B) {
			// Measured before the loop, reported after it: b.Loop resets
			// the timer, which drops metrics reported earlier.
			binlogBytes, haveBinlog := binlogBytesPerTx(b, e, s)
			n := 0
			for b.Loop() {
				if err := e.run(ctx, s); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if s.events > 1 {
				b.ReportMetric(float64(n*s.events)/b.Elapsed().Seconds(), "events/s")
			}
			if haveBinlog {
				b.ReportMetric(binlogBytes, "binlog-B/tx")
			}
		})
	}
}

// BenchmarkEventOverhead alternates a bare one-row transaction and the same
// transaction with a 1 KiB event, so both see the same background load, and
// reports the median of each and the event's share (overhead-%). ns/op is
// the pair's mean.
func BenchmarkEventOverhead(b *testing.B) {
	e := newBenchEnv(b)
	ctx := context.Background()
	bare := txShape{name: "bare"}
	withEvent := txShape{name: "with_event", payloadBytes: 1024, events: 1, aggregates: 1}
	var bareTimes, eventTimes []time.Duration
	for b.Loop() {
		for _, s := range []txShape{bare, withEvent} {
			start := time.Now()
			if err := e.run(ctx, s); err != nil {
				b.Fatal(err)
			}
			if s.events == 0 {
				bareTimes = append(bareTimes, time.Since(start))
			} else {
				eventTimes = append(eventTimes, time.Since(start))
			}
		}
	}
	m0, m1 := median(bareTimes), median(eventTimes)
	b.ReportMetric(float64(m0.Microseconds()), "bare-µs")
	b.ReportMetric(float64(m1.Microseconds()), "with-event-µs")
	b.ReportMetric(100*float64(m1-m0)/float64(m0), "overhead-%")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// binlogBytesPerTx runs a few transactions of shape s, one at a time, and
// returns the smallest growth of the binlog position across one of them.
// It reports false when the server has no binlog or the user may not read
// its position.
func binlogBytesPerTx(b *testing.B, e benchEnv, s txShape) (float64, bool) {
	b.Helper()
	ctx := context.Background()
	best := int64(-1)
	for range 9 {
		file0, pos0, err := binlogPosition(ctx, e.db)
		if err != nil {
			return 0, false
		}
		if err := e.run(ctx, s); err != nil {
			b.Fatal(err)
		}
		file1, pos1, err := binlogPosition(ctx, e.db)
		if err != nil || file1 != file0 {
			continue // rotated
		}
		if d := pos1 - pos0; best < 0 || d < best {
			best = d
		}
	}
	return float64(best), best >= 0
}

func binlogPosition(ctx context.Context, db *sql.DB) (string, int64, error) {
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return "", 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return "", 0, fmt.Errorf("no binlog: %w", rows.Err())
	}
	cols, err := rows.Columns()
	if err != nil {
		return "", 0, err
	}
	vals := make([]any, len(cols))
	var file string
	var pos int64
	vals[0], vals[1] = &file, &pos
	for i := 2; i < len(vals); i++ {
		vals[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(vals...); err != nil {
		return "", 0, err
	}
	return strings.TrimSpace(file), pos, nil
}
