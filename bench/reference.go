package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/database"
	"github.com/herald-outbox/herald/internal/localstack"
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
	producer, err := kgo.NewClient(kgo.SeedBrokers(localstack.SplitBrokers(*brokers)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.DefaultProduceTopic(*topic))
	if err != nil {
		return err
	}
	defer producer.Close()
	for ctx.Err() == nil {
		err := referenceRound(ctx, db, producer)
		switch {
		case ctx.Err() != nil:
			return nil // SIGTERM: the rest of a batch stays leased, as at a crash
		case errors.Is(err, errNothingReady):
			select {
			case <-ctx.Done():
			case <-time.After(referencePoll):
			}
		case isDeadlock(err):
			// MariaDB chose the claim as a deadlock victim (writers insert
			// into the range it locks): claim again, as a loop would.
		case err != nil:
			return err
		}
	}
	return nil
}

// errNothingReady is a claim that found no ready event.
var errNothingReady = errors.New("nothing ready")

// referenceRound is one turn of the loop: claim up to 100 ready events,
// record the lease, commit, then produce each synchronously and mark it.
func referenceRound(ctx context.Context, db *sql.DB, producer *kgo.Client) error {
	type event struct {
		id, agg, typ string
		version      uint16
		payload      []byte
		occurred     time.Time
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, referenceClaim)
	if err != nil {
		return err
	}
	var batch []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.id, &e.agg, &e.typ, &e.version, &e.payload, &e.occurred); err != nil {
			rows.Close()
			return err
		}
		batch = append(batch, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) == 0 {
		return errNothingReady
	}
	args := []any{"reference"}
	for _, e := range batch {
		args = append(args, e.id)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE outbox_events SET locked_at = NOW(6), locked_by = ?, attempts = attempts + 1
		WHERE id IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ")+`)`, args...); err != nil {
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
		if err := producer.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return err
		}
		// The mark is one autocommitted UPDATE per event; a deadlock victim
		// is run again.
		for {
			_, err := db.ExecContext(ctx, "UPDATE outbox_events SET published_at = NOW(6) WHERE id = ?", e.id)
			if !isDeadlock(err) {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// isDeadlock says err is MariaDB's deadlock victim or lock wait timeout.
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}
