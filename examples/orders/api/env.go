package api

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/herald-outbox/herald/database"
)

// DSNDefault is Env.DSN's default: the MariaDB of herald's local stack
// (`make up`).
const DSNDefault = "herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC"

// Env is the orders binary's configuration, read from HERALD_* variables
// by EnvFrom (`orders --help` lists them).
type Env struct {
	// DSN is the orders database: a postgres:// URL, or a MySQL DSN.
	// Defaults to DSNDefault.
	DSN string
	// DatabaseOptions are the database connection's TLS (MySQL only) and
	// password settings (database.ConnOptionsFromEnv: HERALD_MYSQL_TLS*,
	// HERALD_MYSQL_PASSWORD[_FILE]).
	DatabaseOptions database.ConnOptions
	// Config is the service's configuration, without DB and Dialect.
	Config Config
}

// EnvFrom reads Env with getenv (os.Getenv in the binary): the database
// from HERALD_DATABASE_URL, else its alias HERALD_MYSQL_DSN;
// HERALD_ORDERS_ADDR; HERALD_ORDERS_TEST_ROLLBACKS. An invalid value is an
// error naming its variable.
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{DSN: DSNDefault, DatabaseOptions: database.ConnOptionsFromEnv(getenv)}
	for _, name := range []string{"HERALD_DATABASE_URL", "HERALD_MYSQL_DSN"} { // the name, then its alias
		if v := getenv(name); v != "" {
			if err := database.Check(v, database.ConnOptions{}); err != nil {
				return Env{}, fmt.Errorf("%s: %v", name, err)
			}
			e.DSN = v
			break
		}
	}
	e.Config.Addr = getenv("HERALD_ORDERS_ADDR")
	if v := getenv("HERALD_ORDERS_TEST_ROLLBACKS"); v != "" {
		allow, err := strconv.ParseBool(v)
		if err != nil {
			return Env{}, fmt.Errorf("HERALD_ORDERS_TEST_ROLLBACKS: want 0 or 1, got %q", v)
		}
		e.Config.AllowRollbackHeader = allow
	}
	return e, nil
}

// RunEnv runs the service as the orders binary does: it opens env's
// database (a pool of 32 connections), applies the schemas (Migrate) and
// serves until ctx is cancelled (Server.Run), returning nil after a clean
// shutdown.
func RunEnv(ctx context.Context, env Env) error {
	db, dialect, err := database.Open(ctx, env.DSN, env.DatabaseOptions)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	cfg := env.Config
	cfg.DB, cfg.Dialect = db, dialect
	srv, err := New(cfg)
	if err != nil {
		return err
	}

	migrateCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := Migrate(migrateCtx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if cfg.AllowRollbackHeader {
		srv.log.Warn("X-Herald-Rollback is honoured: requests may roll back on purpose (HERALD_ORDERS_TEST_ROLLBACKS)")
	}
	return srv.Run(ctx)
}
