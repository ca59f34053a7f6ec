package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/examples/internal/cmdline"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/internal/connenv"
	"github.com/herald-outbox/herald/store/mysql"
)

const usage = `warehouse: the warehouse service, the external API the inventory example
calls with idempotency keys (POST /v1/operations).

Usage: warehouse [--help]

Settings come from the environment:

  HERALD_WAREHOUSE_ADDR       listen address (default 127.0.0.1:8081)
  HERALD_WAREHOUSE_MYSQL_DSN  its database (default HERALD_MYSQL_DSN, then
                              herald:herald@tcp(127.0.0.1:3306)/herald)
  HERALD_MYSQL_DSN            the database when HERALD_WAREHOUSE_MYSQL_DSN is unset
  HERALD_MYSQL_TLS            verify-identity, verify-ca or skip-verify: TLS to the database, as
                              herald's --mysql-tls (default none, verify-identity with a CA file)
  HERALD_MYSQL_TLS_CA_FILE, HERALD_MYSQL_TLS_CERT_FILE, HERALD_MYSQL_TLS_KEY_FILE,
  HERALD_MYSQL_TLS_SERVER_NAME
                              its CA, client certificate and key, server name (docs/security.md)
  HERALD_MYSQL_PASSWORD_FILE  file holding the database password, replacing the DSN's
  HERALD_MYSQL_PASSWORD       the password itself (when no file is given)
  HERALD_LOG_LEVEL            debug, info (default), warn or error

It applies its own migrations at start, logs JSON to stderr, and on SIGTERM
or SIGINT finishes in-flight requests and exits 0.
`

func main() {
	if code, done := cmdline.Parse("warehouse", usage, os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	slog.SetDefault(log)
	if err := run(log); err != nil {
		log.Error("warehouse failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env := server.EnvFrom(os.Getenv)
	db, err := mysql.OpenWith(ctx, env.DSN, connenv.MySQL(os.Getenv))
	if err != nil {
		return err
	}
	defer db.Close()
	migrateCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := server.Migrations.Up(migrateCtx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	srv, err := server.New(server.Config{Addr: env.Addr, DB: db, Logger: log})
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
