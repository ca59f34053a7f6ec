package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// Database is an empty database (MariaDB or PostgreSQL) that lives as long
// as one test.
type Database struct {
	// Name is the database (schema) name.
	Name string
	// DSN connects to the database; pass it to child processes.
	DSN string
	// DB is an open pool on the database.
	DB *sql.DB
	// Server is the server it lives on.
	Server Server
	// Dialect is its herald dialect.
	Dialect store.Dialect
}

// NewDatabase creates an empty database for t on the server named by
// HERALD_MYSQL_DSN (default: the local stack) and drops it when t ends.
func NewDatabase(t testing.TB) *Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	serverDSN := localstack.MySQLDSN()
	admin, err := mysql.Open(ctx, serverDSN)
	if err != nil {
		requireServer(t, "MySQL", err)
	}
	t.Cleanup(func() { admin.Close() })

	name := uniqueName(t, "herald_t_", 64)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})

	cfg, err := driver.ParseDSN(serverDSN)
	if err != nil {
		t.Fatalf("parse HERALD_MYSQL_DSN: %v", err)
	}
	cfg.DBName = name
	dsn, err := mysql.NormalizeDSN(cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	db, err := mysql.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open database %s: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	return &Database{Name: name, DSN: dsn, DB: db, Server: MariaDB, Dialect: mysql.Dialect{}}
}

func randomSuffix() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// NewHeraldDatabase is NewDatabase with herald's schema applied.
func NewHeraldDatabase(t testing.TB) *Database {
	t.Helper()
	return migrated(t, NewDatabase(t))
}

// migrated applies herald's schema to d.
func migrated(t testing.TB, d *Database) *Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := migrations.Herald.Up(ctx, d.DB); err != nil {
		t.Fatalf("migrate %s: %v", d.Name, err)
	}
	return d
}
