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

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/internal/cmdline"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/migrations"
)

const usage = `inventory: the inventory consumer. It reserves stock for every order.created
and releases it for every order.cancelled, exactly once per event, and tells
the warehouse service about each change with the event id as the
Idempotency-Key.

Usage: inventory [--help]

Settings come from the environment:

  HERALD_DATABASE_URL               database: a postgres:// URL for PostgreSQL, else a MySQL/MariaDB DSN
                                    (default herald:herald@tcp(127.0.0.1:3306)/herald)
  HERALD_MYSQL_DSN                  alias of HERALD_DATABASE_URL (its name before PostgreSQL)
  HERALD_KAFKA_BROKERS              seed brokers, comma-separated (default 127.0.0.1:9092)
  HERALD_KAFKA_TLS                  true: TLS with the system roots or HERALD_KAFKA_TLS_CA_FILE (default false)
  HERALD_KAFKA_TLS_CA_FILE, HERALD_KAFKA_TLS_CERT_FILE, HERALD_KAFKA_TLS_KEY_FILE,
  HERALD_KAFKA_TLS_SERVER_NAME      CA, client certificate and key (mutual TLS), server name
  HERALD_KAFKA_SASL_MECHANISM       PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default none)
  HERALD_KAFKA_SASL_USERNAME, HERALD_KAFKA_SASL_PASSWORD_FILE, HERALD_KAFKA_SASL_PASSWORD
                                    SASL user and its password (a file, or the variable);
                                    each HERALD_KAFKA_* setting is herald's --kafka-* flag (docs/security.md)
  HERALD_MYSQL_TLS                  MySQL only: verify-identity, verify-ca or skip-verify (default none,
                                    verify-identity with a CA file), as herald's --mysql-tls; a PostgreSQL
                                    URL asks for TLS itself (sslmode, sslrootcert, sslcert, sslkey)
  HERALD_MYSQL_TLS_CA_FILE, HERALD_MYSQL_TLS_CERT_FILE, HERALD_MYSQL_TLS_KEY_FILE,
  HERALD_MYSQL_TLS_SERVER_NAME      MySQL's CA, client certificate and key, server name
  HERALD_MYSQL_PASSWORD_FILE, HERALD_MYSQL_PASSWORD
                                    the database password, MySQL or PostgreSQL (a file, or the variable),
                                    replacing the address's
  HERALD_INVENTORY_TOPICS           topics, comma-separated (default orders.v1)
  HERALD_INVENTORY_CONSUMER         inbox consumer name (default inventory)
  HERALD_INVENTORY_GROUP            Kafka consumer group (default the consumer name)
  HERALD_WAREHOUSE_URL              warehouse base URL (default http://127.0.0.1:8081)
  HERALD_INVENTORY_ADDR             /healthz and /stats address (default 127.0.0.1:9102; "-" for none)
  HERALD_INVENTORY_BATCH_SIZE       records per transaction (default 1)
  HERALD_INVENTORY_AUTO_PROVISION   create unknown SKUs with the default stock (default true)
  HERALD_INVENTORY_DEFAULT_STOCK    stock of an auto-provisioned SKU (default 1000000)
  HERALD_INVENTORY_SEED             stock created at start, e.g. SKU-1=100,SKU-2=5
                                    (default SKU-1..SKU-20 with 1000000 each; existing rows are kept)
  HERALD_INVENTORY_SWEEP_INTERVAL   how often pending warehouse calls are swept (default 2s)
  HERALD_INVENTORY_SWEEP_GRACE      age before the sweeper takes a pending call (default 5s)
  HERALD_INVENTORY_SESSION_TIMEOUT  Kafka group session timeout (default 45s, at least 6s)
  HERALD_INVENTORY_START_AT         replay: a NEW group starts at this RFC 3339 time
  HERALD_INVENTORY_RATE_LIMIT       records per second, for replays (default unlimited)
  HERALD_LOG_LEVEL                  debug, info (default), warn or error
  HERALD_FAILPOINTS                 crash drills, e.g. consumer.after_commit_before_offset=crash

At start it applies herald's migrations (consumed_events) and its own, and
seeds stock. It logs JSON to stderr. On SIGTERM or SIGINT it finishes the
transaction and the warehouse call at hand, commits its offsets, leaves the
group and exits 0.
`

func main() {
	if code, done := cmdline.Parse("inventory", usage, os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
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
	cfg.KafkaOptions = kafkaOpts
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
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.KafkaOptions...)...)
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
