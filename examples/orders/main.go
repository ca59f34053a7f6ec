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
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/herald-outbox/herald/examples/orders/api"
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

It applies herald's schema and its own at start, logs JSON to stderr and stops
gracefully on SIGTERM or SIGINT (exit code 0).
`

func main() {
	if code, done := parseCommandLine(os.Args[1:]); done {
		os.Exit(code)
	}
	env, err := api.EnvFrom(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orders: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(env))
}

func run(env api.Env) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env.Config.Logger = log
	if err := api.RunEnv(ctx, env); err != nil {
		log.Error("orders service stopped", "error", err.Error())
		return 1
	}
	return 0
}

// parseCommandLine reads the command line, which takes nothing but --help
// (or -h): it prints usage to stdout and exits 0 before anything reaches a
// server; any other flag or argument is an error (exit 2). done says main
// must exit at once, with code.
func parseCommandLine(args []string) (code int, done bool) {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {} // --help prints to stdout below; a bad flag points to --help
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Print(usage)
		return 0, true
	case err != nil:
		fmt.Fprintln(os.Stderr, "orders: settings come from the environment; see orders --help")
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(os.Stderr, "orders: unexpected argument %q: settings come from the environment; see orders --help\n", fs.Arg(0))
		return 2, true
	}
	return 0, false
}
