package testenv

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// Server names a database server of the local stack.
type Server string

// The database servers herald runs on.
const (
	MariaDB    Server = "mariadb"
	PostgreSQL Server = "postgres"
)

// Servers lists every database server, for tests that run on each.
var Servers = []Server{MariaDB, PostgreSQL}

// OnEachServer runs fn as a subtest per database server, named after it.
// Subtests run one after the other, like the package's other tests.
func OnEachServer(t *testing.T, fn func(t *testing.T, s Server)) {
	t.Helper()
	for _, s := range Servers {
		t.Run(string(s), func(t *testing.T) { fn(t, s) })
	}
}

// NewDatabaseOn creates an empty database for t on server s.
func NewDatabaseOn(t testing.TB, s Server) *Database {
	t.Helper()
	if s == PostgreSQL {
		return NewPostgresDatabase(t)
	}
	return NewDatabase(t)
}

// NewHeraldDatabaseOn is NewDatabaseOn with herald's schema applied.
func NewHeraldDatabaseOn(t testing.TB, s Server) *Database {
	t.Helper()
	return migrated(t, NewDatabaseOn(t, s))
}

// NewPostgresDatabase creates an empty database for t on the PostgreSQL
// server named by HERALD_POSTGRES_URL (default: the local stack) and drops
// it when t ends.
func NewPostgresDatabase(t testing.TB) *Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	serverURL := localstack.PostgresURL()
	admin, err := postgres.Open(ctx, serverURL)
	if err != nil {
		requirePostgres(t, err)
	}
	t.Cleanup(func() { admin.Close() })

	name := uniqueName(t, "herald_t_", 63)
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := database.DropDatabase(ctx, admin, postgres.Dialect{}, name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("parse HERALD_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + name
	dsn := u.String()
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open database %s: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	return &Database{Name: name, DSN: dsn, DB: db, Server: PostgreSQL, Dialect: postgres.Dialect{}}
}

func requirePostgres(t testing.TB, err error) {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipped under -short: PostgreSQL is not reachable (%v); run `make up`", err)
	}
	t.Fatalf("PostgreSQL is not reachable: %v\nrun `make up` (or set HERALD_POSTGRES_URL)", err)
}

// Store returns herald's store on d.
func (d *Database) Store() *store.Store { return store.New(d.DB, d.Dialect) }

// SQL returns a test's own statement, written with ? placeholders, in d's
// dialect (database.Rebind).
func (d *Database) SQL(query string) string { return database.Rebind(d.Dialect, query) }

// Count runs a COUNT(*) query written with ? placeholders (see SQL).
func (d *Database) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.DB.QueryRow(d.SQL(query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Strings returns the single string column a query (with ? placeholders)
// selects.
func (d *Database) Strings(t testing.TB, query string, args ...any) []string {
	t.Helper()
	return Strings(t, d.DB, d.SQL(query), args...)
}

// Exec runs a statement written with ? placeholders.
func (d *Database) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := d.DB.Exec(d.SQL(query), args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
