package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/database"
)

// referenceClaim is the claim of the specification's source material: the
// ready rows by occurred_at, locked, skipping those another transaction
// holds (it does not exclude rows another relay leased and committed).
const referenceClaim = `SELECT id, aggregate_id, event_type, schema_version, payload, occurred_at
FROM outbox_events WHERE published_at IS NULL AND next_attempt_at <= NOW(6)
ORDER BY occurred_at LIMIT 100 FOR UPDATE SKIP LOCKED`

// referencePoll is the reference loop's wait after a claim that found
// nothing (herald's default poll interval, so idle costs compare).
const referencePoll = 50 * time.Millisecond

// runReference is the `reference` subcommand: the reference loop as a
// process of its own, until SIGTERM.
func runReference(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("reference", flag.ContinueOnError)
	dsn := fs.String("dsn", "", "MariaDB DSN of the outbox's database")
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	topic := fs.String("topic", "", "topic every event goes to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" || *topic == "" {
		return fmt.Errorf("reference: --dsn and --topic are required")
	}
	db, _, err := database.Open(ctx, *dsn, database.ConnOptions{})
	if err != nil {
		return err
	}
	defer db.Close()
	// acks=all and the idempotent producer as herald's; no linger: a
	// synchronous send has no company to wait for.
	producer, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*brokers, ",")...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.DefaultProduceTopic(*topic))
	if err != nil {
		return err
	}
	defer producer.Close()
	type event struct {
		id, agg, typ string
		version      uint16
		payload      []byte
		occurred     time.Time
	}
	for ctx.Err() == nil {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, referenceClaim)
		if err != nil {
			tx.Rollback()
			return err
		}
		var batch []event
		for rows.Next() {
			var e event
			if err := rows.Scan(&e.id, &e.agg, &e.typ, &e.version, &e.payload, &e.occurred); err != nil {
				rows.Close()
				tx.Rollback()
				return err
			}
			batch = append(batch, e)
		}
		if err := rows.Err(); err != nil {
			tx.Rollback()
			return err
		}
		if len(batch) == 0 {
			tx.Rollback()
			select {
			case <-ctx.Done():
			case <-time.After(referencePoll):
			}
			continue
		}
		args := []any{"reference"}
		for _, e := range batch {
			args = append(args, e.id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE outbox_events SET locked_at = NOW(6), locked_by = ?, attempts = attempts + 1
			WHERE id IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ")+`)`, args...); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		for _, e := range batch {
			value, err := envelope.Encode(envelope.Envelope{EventID: e.id, Type: e.typ, Version: e.version, OccurredAt: e.occurred, Data: e.payload})
			if err != nil {
				return err
			}
			rec := &kgo.Record{Key: []byte(e.agg), Value: value,
				Headers: []kgo.RecordHeader{{Key: envelope.HeaderEventID, Value: []byte(e.id)}}}
			// Stopping mid-batch is the loop's crash: the rest stays leased.
			if err := producer.ProduceSync(context.WithoutCancel(ctx), rec).FirstErr(); err != nil {
				return err
			}
			if _, err := db.ExecContext(context.WithoutCancel(ctx), "UPDATE outbox_events SET published_at = NOW(6) WHERE id = ?", e.id); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	return nil
}
