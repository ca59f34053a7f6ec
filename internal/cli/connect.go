package cli

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/database"
	"github.com/herald-outbox/herald/internal/localstack"
)

// envFlags collects a command's flag -> environment variable bindings.
type envFlags map[string]string

// bind registers the bindings on cmd: help text now, values before RunE.
func (e envFlags) bind(cmd *cobra.Command) {
	envHelp(cmd, e)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return bindEnv(cmd, e) }
}

// dbFlags is the --database-url flag (alias --mysql-dsn) shared by every
// command that talks to the database (database.go).
type dbFlags struct {
	dsn, mysqlDSN        string
	urlGiven, mysqlGiven bool
}

func (f *dbFlags) register(cmd *cobra.Command, env envFlags) {
	f.registerDatabase(cmd, env)
}

// open connects, naming the flag when the address cannot be parsed.
func (f *dbFlags) open(ctx context.Context) (*sql.DB, error) {
	dsn, err := f.url()
	if err != nil {
		return nil, err
	}
	db, _, err := database.Open(ctx, dsn)
	return db, err
}

// kafkaFlags is the --kafka-brokers flag.
type kafkaFlags struct {
	brokers []string
}

func (f *kafkaFlags) register(cmd *cobra.Command, env envFlags) {
	cmd.Flags().StringSliceVar(&f.brokers, "kafka-brokers", []string{localstack.KafkaBrokersDefault},
		"Kafka seed brokers, comma-separated")
	env["kafka-brokers"] = "HERALD_KAFKA_BROKERS"
}

func (f *kafkaFlags) validate() error {
	if len(f.brokers) == 0 {
		return usageError{fmt.Errorf("--kafka-brokers: at least one broker is required")}
	}
	return nil
}

// admin returns an admin client after checking the cluster answers.
func (f *kafkaFlags) admin(ctx context.Context) (*kadm.Client, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.brokers...))
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := adm.BrokerMetadata(pingCtx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka at %v does not answer: %w", f.brokers, err)
	}
	return adm, nil
}
