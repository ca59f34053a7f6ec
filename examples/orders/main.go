// Command orders runs the orders example service (package api): an HTTP API
// that writes orders and their outbox events in one transaction.
//
//	go run ./examples/orders
//
// Environment:
//
//	HERALD_ORDERS_ADDR            listen address (default 127.0.0.1:8080; port 0 picks a free one)
//	HERALD_DATABASE_URL           a postgres:// URL for PostgreSQL, else a MySQL/MariaDB DSN (default: the
//	                              local stack's MariaDB); HERALD_MYSQL_DSN is its alias
//	HERALD_ORDERS_TEST_ROLLBACKS  1 honours the X-Herald-Rollback header, for fault drills (default 0)
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

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/internal/database"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/internal/localstack"
)

func main() {
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
	if err := database.Check(dsn); err != nil {
		fmt.Fprintf(os.Stderr, "orders: %s: %v\n", variable, err)
		return 2
	}

	db, dialect, err := database.Open(ctx, dsn)
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
