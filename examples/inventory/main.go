package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/herald-outbox/herald/examples/inventory/stock"
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

At start it applies herald's migrations (consumed_events) and its own, and
seeds stock. It logs JSON to stderr. On SIGTERM or SIGINT it finishes the
transaction and the warehouse call at hand, commits its offsets, leaves the
group and exits 0.
`

func main() {
	if code, done := parseCommandLine(os.Args[1:]); done {
		os.Exit(code)
	}
	env, err := stock.EnvFrom(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	slog.SetDefault(log)
	if err == nil {
		err = run(env, log)
	}
	if err != nil {
		log.Error("inventory failed", "error", err)
		os.Exit(1)
	}
}

func run(env stock.Env, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env.Config.Logger = log
	return stock.RunEnv(ctx, env)
}

// parseCommandLine reads the command line, which takes nothing but --help
// (or -h): it prints usage to stdout and exits 0 before anything reaches a
// server; any other flag or argument is an error (exit 2). done says main
// must exit at once, with code.
func parseCommandLine(args []string) (code int, done bool) {
	fs := flag.NewFlagSet("inventory", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {} // --help prints to stdout below; a bad flag points to --help
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Print(usage)
		return 0, true
	case err != nil:
		fmt.Fprintln(os.Stderr, "inventory: settings come from the environment; see inventory --help")
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(os.Stderr, "inventory: unexpected argument %q: settings come from the environment; see inventory --help\n", fs.Arg(0))
		return 2, true
	}
	return 0, false
}
