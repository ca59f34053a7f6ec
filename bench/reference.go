package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/reference"
)

// referencePoll is the reference loop's wait after a claim that found
// nothing (herald's default poll interval, so idle costs compare).
const referencePoll = 50 * time.Millisecond

// runReference is the `reference` subcommand: the reference loop as a
// process of its own, until SIGTERM.
func runReference(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("reference", flag.ContinueOnError)
	dsn := fs.String("dsn", "", "MariaDB DSN of the outbox's database")
	brokers := fs.String("brokers", localstack.KafkaBrokersDefault, "Kafka seed brokers, comma-separated")
	topic := fs.String("topic", "", "topic every event goes to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" || *topic == "" {
		return fmt.Errorf("reference: --dsn and --topic are required")
	}
	db, dialect, err := database.Open(ctx, *dsn, database.ConnOptions{})
	if err != nil {
		return err
	}
	defer db.Close()
	producer, err := reference.NewProducer(localstack.SplitBrokers(*brokers), *topic)
	if err != nil {
		return err
	}
	defer producer.Close()
	for ctx.Err() == nil {
		_, err := reference.Round(ctx, db, dialect, producer)
		switch {
		case ctx.Err() != nil:
			return nil // SIGTERM: the rest of a batch stays leased, as at a crash
		case errors.Is(err, reference.ErrNothingReady):
			select {
			case <-ctx.Done():
			case <-time.After(referencePoll):
			}
		case dialect.IsTransient(err):
			// MariaDB chose the claim as a deadlock victim (writers insert
			// into the range it locks): claim again, as a loop would.
		case err != nil:
			return err
		}
	}
	return nil
}
