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
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/warehouse/server"
)

const usage = `warehouse: the warehouse service, the external API the inventory example
calls with idempotency keys (POST /v1/operations).

Usage: warehouse [--help]

Settings come from the environment:

  HERALD_WAREHOUSE_ADDR       listen address (default 127.0.0.1:8081)
  HERALD_WAREHOUSE_MYSQL_DSN  its database, a postgres:// URL or a MySQL/MariaDB DSN (default
                              HERALD_DATABASE_URL, then HERALD_MYSQL_DSN, then
                              herald:herald@tcp(127.0.0.1:3306)/herald)
  HERALD_DATABASE_URL         the database when HERALD_WAREHOUSE_MYSQL_DSN is unset
  HERALD_MYSQL_DSN            alias of HERALD_DATABASE_URL (its name before PostgreSQL)
  HERALD_MYSQL_TLS            MySQL only: verify-identity, verify-ca or skip-verify, as herald's
                              --mysql-tls (default none, verify-identity with a CA file); a
                              PostgreSQL URL asks for TLS itself (sslmode, sslrootcert, ...)
  HERALD_MYSQL_TLS_CA_FILE, HERALD_MYSQL_TLS_CERT_FILE, HERALD_MYSQL_TLS_KEY_FILE,
  HERALD_MYSQL_TLS_SERVER_NAME
                              MySQL's CA, client certificate and key, server name (docs/security.md)
  HERALD_MYSQL_PASSWORD_FILE  file holding the database password (MySQL or PostgreSQL), replacing
                              the address's
  HERALD_MYSQL_PASSWORD       the password itself (when no file is given)
  HERALD_LOG_LEVEL            debug, info (default), warn or error

It applies its own migrations at start, logs JSON to stderr, and on SIGTERM
or SIGINT finishes in-flight requests and exits 0.
`

func main() {
	if code, done := parseCommandLine(os.Args[1:]); done {
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
	db, dialect, err := database.Open(ctx, env.DSN, database.ConnOptionsFromEnv(os.Getenv))
	if err != nil {
		return err
	}
	defer db.Close()
	migrateCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := server.Migrations.Up(migrateCtx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	srv, err := server.New(server.Config{Addr: env.Addr, DB: db, Dialect: dialect, Logger: log})
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

// parseCommandLine reads the command line, which takes nothing but --help
// (or -h): it prints usage to stdout and exits 0 before anything reaches a
// server; any other flag or argument is an error (exit 2). done says main
// must exit at once, with code.
func parseCommandLine(args []string) (code int, done bool) {
	fs := flag.NewFlagSet("warehouse", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {} // --help prints to stdout below; a bad flag points to --help
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Print(usage)
		return 0, true
	case err != nil:
		fmt.Fprintln(os.Stderr, "warehouse: settings come from the environment; see warehouse --help")
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(os.Stderr, "warehouse: unexpected argument %q: settings come from the environment; see warehouse --help\n", fs.Arg(0))
		return 2, true
	}
	return 0, false
}
