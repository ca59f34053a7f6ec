// Package database turns a database address into a connection pool and
// its herald dialect, in one place for every command of the herald binary
// and for the examples: a postgres:// or postgresql:// URL is PostgreSQL,
// anything else a MySQL/MariaDB DSN.
package database

import (
	"context"
	"database/sql"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/postgres"
)

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool { return postgres.IsURL(dsn) }

// Dialect returns dsn's dialect.
func Dialect(dsn string) store.Dialect {
	if IsPostgres(dsn) {
		return postgres.Dialect{}
	}
	return mysql.Dialect{}
}

// Check parses dsn without connecting. Its error never echoes a password.
func Check(dsn string) error {
	if IsPostgres(dsn) {
		_, err := postgres.ParseURL(dsn)
		return err
	}
	_, err := mysql.NormalizeDSN(dsn)
	return err
}

// Open connects to dsn's database the dialect's way (mysql.Open,
// postgres.Open) and returns the pool and the dialect.
func Open(ctx context.Context, dsn string) (*sql.DB, store.Dialect, error) {
	if IsPostgres(dsn) {
		db, err := postgres.Open(ctx, dsn)
		return db, postgres.Dialect{}, err
	}
	db, err := mysql.Open(ctx, dsn)
	return db, mysql.Dialect{}, err
}

// OpenStore is Open wrapped in herald's store.
func OpenStore(ctx context.Context, dsn string) (*store.Store, error) {
	db, d, err := Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return store.New(db, d), nil
}

// Address returns dsn's server and database without credentials, for logs
// and error messages.
func Address(dsn string) string {
	if IsPostgres(dsn) {
		return postgres.Address(dsn)
	}
	return mysql.Address(dsn)
}
