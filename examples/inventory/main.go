package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/internal/database"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/migrations"
)

func main() {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "inventory: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	slog.SetDefault(log)
	if err := run(log); err != nil {
		log.Error("inventory failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env, err := stock.EnvFrom(os.Getenv)
	if err != nil {
		return err
	}
	db, dialect, err := database.Open(ctx, env.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, set := range []migrations.Set{migrations.Herald, stock.Migrations} {
		if _, err := set.Up(setupCtx, db); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := stock.Seed(setupCtx, db, dialect, env.Seed); err != nil {
		return err
	}
	cfg := env.Config
	cfg.DB, cfg.Dialect = db, dialect
	cfg.Logger = log
	stopMetrics, err := serveMetrics(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	svc, err := stock.New(cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

// serveMetrics adds /metrics to the service's address: the inbox's counters
// and the group's lag, read from Kafka every 15 s.
func serveMetrics(ctx context.Context, cfg *stock.Config, log *slog.Logger) (stop func(), err error) {
	name := cfg.ConsumerName
	if name == "" {
		name = stock.ConsumerNameDefault
	}
	group := cfg.Group
	if group == "" {
		group = name
	}
	topics := cfg.Topics
	if len(topics) == 0 {
		topics = []string{contract.TopicOrdersDefault}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, fmt.Errorf("kafka admin client: %w", err)
	}
	reg := metrics.NewRegistry()
	cfg.Observer = metrics.NewConsumer(reg, name)
	lag := metrics.NewConsumerLag(reg, kadm.NewClient(cl), group, topics, 0, log)
	lagCtx, cancel := context.WithCancel(ctx)
	go lag.Run(lagCtx)
	cfg.Routes = func(mux *http.ServeMux) { mux.Handle("GET /metrics", metrics.Handler(reg)) }
	return func() { cancel(); cl.Close() }, nil
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
