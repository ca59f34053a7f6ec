package stock

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/migrations"
)

// RunEnv runs the consumer as the inventory binary does: it opens env's
// database, applies herald's migrations (consumed_events) and Migrations,
// seeds env.Seed, adds /metrics to the service's address and runs the
// Service until ctx is cancelled.
func RunEnv(ctx context.Context, env Env) error {
	kafkaOpts, err := env.Kafka.Options()
	if err != nil {
		return fmt.Errorf("kafka security (HERALD_KAFKA_*): %w", err)
	}
	db, dialect, err := database.Open(ctx, env.DSN, env.DatabaseOptions)
	if err != nil {
		return err
	}
	defer db.Close()
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, set := range []migrations.Set{migrations.Herald, Migrations} {
		if _, err := set.Up(setupCtx, db); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := Seed(setupCtx, db, dialect, env.Seed); err != nil {
		return err
	}
	cfg := env.Config.withDefaults()
	cfg.DB, cfg.Dialect = db, dialect
	cfg.KafkaOptions = kafkaOpts
	stopMetrics, err := serveMetrics(ctx, &cfg)
	if err != nil {
		return err
	}
	defer stopMetrics()
	svc, err := New(cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

// serveMetrics adds /metrics to the service's address: the inbox's counters
// and the group's lag, read from Kafka every 15 s. cfg has its defaults.
func serveMetrics(ctx context.Context, cfg *Config) (stop func(), err error) {
	group := cfg.Group
	if group == "" {
		group = cfg.ConsumerName
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.KafkaOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka admin client: %w", err)
	}
	reg := metrics.NewRegistry()
	cfg.Observer = metrics.NewConsumer(reg, cfg.ConsumerName)
	lag := metrics.NewConsumerLag(reg, kadm.NewClient(cl), group, cfg.Topics, 0, cfg.Logger)
	lagCtx, cancel := context.WithCancel(ctx)
	go lag.Run(lagCtx)
	cfg.Routes = func(mux *http.ServeMux) { mux.Handle("GET /metrics", metrics.Handler(reg)) }
	return func() { cancel(); cl.Close() }, nil
}
