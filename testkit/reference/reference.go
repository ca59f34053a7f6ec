package reference

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/store"
)

// ClaimQuery is the loop's claim. It orders by occurred_at (a sort over
// the ready range). CURRENT_TIMESTAMP(6) is NOW(6) on MySQL and the
// transaction's start on PostgreSQL: the loop runs as is on both.
const ClaimQuery = `SELECT id, aggregate_id, event_type, schema_version, payload, occurred_at
FROM outbox_events WHERE published_at IS NULL AND next_attempt_at <= CURRENT_TIMESTAMP(6)
ORDER BY occurred_at LIMIT 100 FOR UPDATE SKIP LOCKED`

// ErrNothingReady is a round whose claim found no ready event.
var ErrNothingReady = errors.New("reference loop: nothing ready")

// NewProducer is the loop's producer for topic: the durability of herald's
// (acks=all, idempotent, lz4) but no linger, since a synchronous send has
// no company to wait for.
func NewProducer(brokers []string, topic string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.DefaultProduceTopic(topic)}, opts...)...)
}

// Round is one turn of the loop on db: it returns how many events it
// published, or ErrNothingReady. A mark the server rolled back as a
// deadlock victim (dialect.IsTransient) is run again; a failed claim is the
// caller's to retry.
func Round(ctx context.Context, db *sql.DB, dialect store.Dialect, producer *kgo.Client) (int, error) {
	type event struct {
		id, agg, typ string
		version      uint16
		payload      []byte
		occurred     time.Time
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, ClaimQuery)
	if err != nil {
		return 0, err
	}
	var batch []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.id, &e.agg, &e.typ, &e.version, &e.payload, &e.occurred); err != nil {
			rows.Close()
			return 0, err
		}
		batch = append(batch, e)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(batch) == 0 {
		return 0, ErrNothingReady
	}
	args := []any{"reference"}
	for _, e := range batch {
		args = append(args, e.id)
	}
	lease := `UPDATE outbox_events SET locked_at = CURRENT_TIMESTAMP(6), locked_by = ?, attempts = attempts + 1
		WHERE id IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ") + `)`
	if _, err := tx.ExecContext(ctx, database.Rebind(dialect, lease), args...); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	mark := database.Rebind(dialect, "UPDATE outbox_events SET published_at = CURRENT_TIMESTAMP(6) WHERE id = ?")
	for i, e := range batch {
		value, err := envelope.Encode(envelope.Envelope{EventID: e.id, Type: e.typ, Version: e.version, OccurredAt: e.occurred, Data: e.payload})
		if err != nil {
			return i, err
		}
		rec := &kgo.Record{Key: []byte(e.agg), Value: value,
			Headers: []kgo.RecordHeader{{Key: envelope.HeaderEventID, Value: []byte(e.id)}}}
		if err := producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return i, err
		}
		for {
			_, err := db.ExecContext(ctx, mark, e.id)
			if err == nil {
				break
			}
			if !dialect.IsTransient(err) || ctx.Err() != nil {
				return i, err
			}
		}
	}
	return len(batch), nil
}
