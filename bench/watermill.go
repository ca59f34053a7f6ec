package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// runWatermill is the `watermill` subcommand: Watermill's forwarder as
// its documentation sets it up for an outbox (a watermill-sql MySQL
// subscriber on the forwarder's SQL topic, a watermill-kafka publisher),
// until SIGTERM.
func runWatermill(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("watermill", flag.ContinueOnError)
	dsn := fs.String("dsn", "", "MariaDB DSN of the outbox's database")
	brokers := fs.String("brokers", localstack.KafkaBrokersDefault, "Kafka seed brokers, comma-separated")
	batch := fs.Int("subscribe-batch", 0, "the MySQL subscriber's SubscribeBatchSize (0: Watermill's default, 100)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dsn == "" {
		return fmt.Errorf("watermill: --dsn is required")
	}
	db, _, err := database.Open(ctx, *dsn, database.ConnOptions{})
	if err != nil {
		return err
	}
	defer db.Close()
	logger := watermill.NewSlogLogger(nil)
	sub, err := wsql.NewSubscriber(wsql.BeginnerFromStdSQL(db), wsql.SubscriberConfig{
		SchemaAdapter:    wsql.DefaultMySQLSchema{SubscribeBatchSize: *batch},
		OffsetsAdapter:   wsql.DefaultMySQLOffsetsAdapter{},
		InitializeSchema: true,
	}, logger)
	if err != nil {
		return err
	}
	pub, err := kafka.NewPublisher(kafka.PublisherConfig{
		Brokers: localstack.SplitBrokers(*brokers),
		// The key is the aggregate id, so one aggregate stays on one
		// partition (watermill-kafka's partitioning marshaler).
		Marshaler: kafka.NewWithPartitioningMarshaler(func(_ string, msg *message.Message) (string, error) {
			return msg.Metadata.Get(watermillKeyMetadata), nil
		}),
	}, logger)
	if err != nil {
		return err
	}
	fwd, err := forwarder.NewForwarder(sub, pub, logger, forwarder.Config{ForwarderTopic: forwarderTopic})
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		fwd.Close()
	}()
	return fwd.Run(context.WithoutCancel(ctx))
}
