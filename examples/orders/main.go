// Command orders runs the orders example service (package api): an HTTP API
// that writes orders and their outbox events in one transaction.
//
//	go run ./examples/orders
//	go run ./examples/orders --help   # its settings (environment variables)
//
// It applies herald's schema and its own on start, logs JSON to stderr and
// stops gracefully on SIGTERM or SIGINT (exit code 0).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/internal/cmdline"
	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/testkit/localstack"
)

const usage = `orders: the orders example service, an HTTP API that writes each order and
its outbox event in one transaction (see examples/orders/README.md).

Usage: orders [--help]

Settings come from the environment:

  HERALD_ORDERS_ADDR            listen address (default 127.0.0.1:8080; port 0 picks a free one)
  HERALD_DATABASE_URL           a postgres:// URL for PostgreSQL, else a MySQL/MariaDB DSN (default:
                                the local stack's MariaDB); UTC settings are added
  HERALD_MYSQL_DSN              alias of HERALD_DATABASE_URL (its name before PostgreSQL)
  HERALD_MYSQL_TLS              MySQL only: verify-identity, verify-ca or skip-verify, as herald's
                                --mysql-tls (default none, verify-identity with a CA file); a PostgreSQL
                                URL asks for TLS itself (sslmode, sslrootcert, sslcert, sslkey)
  HERALD_MYSQL_TLS_CA_FILE, HERALD_MYSQL_TLS_CERT_FILE, HERALD_MYSQL_TLS_KEY_FILE,
  HERALD_MYSQL_TLS_SERVER_NAME  MySQL's CA, client certificate and key, server name (docs/security.md)
  HERALD_MYSQL_PASSWORD_FILE    file holding the database password (MySQL or PostgreSQL), replacing
                                the address's
  HERALD_MYSQL_PASSWORD         the password itself (when no file is given)
  HERALD_ORDERS_TEST_ROLLBACKS  1 honours the X-Herald-Rollback header, for fault drills (default 0)
  HERALD_FAILPOINTS             crash drills, e.g. orders.after_commit=crash (default none)

It applies herald's schema and its own at start, logs JSON to stderr and stops
gracefully on SIGTERM or SIGINT (exit code 0).
`

func main() {
	if code, done := cmdline.Parse("orders", usage, os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
	os.Exit(run())
}

func run() int {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "orders: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := api.Config{Addr: os.Getenv("HERALD_ORDERS_ADDR"), Logger: log}
	if v := os.Getenv("HERALD_ORDERS_TEST_ROLLBACKS"); v != "" {
		allow, err := strconv.ParseBool(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "orders: HERALD_ORDERS_TEST_ROLLBACKS: want 0 or 1, got %q\n", v)
			return 2
		}
		cfg.AllowRollbackHeader = allow
	}
	dsn, variable := localstack.DatabaseURL()
	if err := database.Check(dsn, database.ConnOptions{}); err != nil {
		fmt.Fprintf(os.Stderr, "orders: %s: %v\n", variable, err)
		return 2
	}

	db, dialect, err := database.Open(ctx, dsn, database.ConnOptionsFromEnv(os.Getenv))
	if err != nil {
		log.Error("open database", "error", err.Error())
		return 1
	}
	defer db.Close()
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	cfg.DB, cfg.Dialect = db, dialect

	migrateCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := api.Migrate(migrateCtx, db); err != nil {
		log.Error("migrate", "error", err.Error())
		return 1
	}
	if cfg.AllowRollbackHeader {
		log.Warn("X-Herald-Rollback is honoured: requests may roll back on purpose (HERALD_ORDERS_TEST_ROLLBACKS)")
	}
	srv, err := api.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orders: %v\n", err)
		return 2
	}
	if err := srv.Run(ctx); err != nil {
		log.Error("orders service stopped", "error", err.Error())
		return 1
	}
	return 0
}
