package api

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

// Defaults of Config's fields.
const (
	// AddrDefault is Config.Addr's default.
	AddrDefault = "127.0.0.1:8080"
	// RequestTimeoutDefault is Config.RequestTimeout's default.
	RequestTimeoutDefault = 5 * time.Second
	// ShutdownTimeoutDefault is Config.ShutdownTimeout's default.
	ShutdownTimeoutDefault = 10 * time.Second
	// ReadHeaderTimeoutDefault is Config.ReadHeaderTimeout's default.
	ReadHeaderTimeoutDefault = 5 * time.Second
	// ReadTimeoutDefault is Config.ReadTimeout's default.
	ReadTimeoutDefault = 10 * time.Second
	// WriteTimeoutDefault is Config.WriteTimeout's default.
	WriteTimeoutDefault = 15 * time.Second
	// IdleTimeoutDefault is Config.IdleTimeout's default.
	IdleTimeoutDefault = 60 * time.Second
)

// Config shapes a Server. Zero fields take their defaults; only DB is
// required.
type Config struct {
	// DB is where orders and their events are written, in one transaction.
	// Its schema must be migrated first (Migrate). Required.
	DB *sql.DB
	// Dialect is DB's: mysql.Dialect{} or postgres.Dialect{}. Defaults to
	// mysql.Dialect{}.
	Dialect store.Dialect
	// Addr is the TCP address Run listens on; port 0 picks a free port (the
	// "listening" log line names it). Defaults to "127.0.0.1:8080".
	Addr string
	// Logger receives the service's structured logs. Defaults to JSON on
	// stderr.
	Logger *slog.Logger
	// Outbox shapes the outbox writer; its Dialect defaults to Dialect.
	// Defaults to outbox.Config{}.
	Outbox outbox.Config
	// RequestTimeout bounds the database work of one request; a request
	// that runs out of it is rolled back and answered 503. Defaults to 5 s.
	RequestTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for requests in flight once
	// its context is cancelled. Defaults to 10 s.
	ShutdownTimeout time.Duration
	// ReadHeaderTimeout is http.Server.ReadHeaderTimeout. Defaults to 5 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is http.Server.ReadTimeout. Defaults to 10 s.
	ReadTimeout time.Duration
	// WriteTimeout is http.Server.WriteTimeout; it must exceed
	// RequestTimeout. Defaults to 15 s.
	WriteTimeout time.Duration
	// IdleTimeout is http.Server.IdleTimeout. Defaults to 60 s.
	IdleTimeout time.Duration
	// AllowRollbackHeader lets a POST /orders carrying "X-Herald-Rollback: 1"
	// write its order and event and then roll them back on purpose, for
	// fault drills (see RollbackHeader). Never enable it in production.
	// Defaults to false.
	AllowRollbackHeader bool
	// AfterCommit, when set, is called after a create or a cancel
	// committed and before its answer is written (a replayed create
	// commits nothing and does not call it): the window where a crash
	// leaves a committed order, and its event, without an answer. herald's
	// crash drills stop the process there. Defaults to nil.
	AfterCommit func()

	// afterBusinessInsert, when set, runs inside the create transaction
	// after the order rows and before the event; an error rolls back.
	// Tests set it through export_test.go.
	afterBusinessInsert func(ctx context.Context) error
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = AddrDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if c.Dialect == nil {
		c.Dialect = mysql.Dialect{}
	}
	if c.Outbox.Dialect == nil {
		c.Outbox.Dialect = c.Dialect
	}
	for _, d := range []struct {
		field *time.Duration
		def   time.Duration
	}{
		{&c.RequestTimeout, RequestTimeoutDefault},
		{&c.ShutdownTimeout, ShutdownTimeoutDefault},
		{&c.ReadHeaderTimeout, ReadHeaderTimeoutDefault},
		{&c.ReadTimeout, ReadTimeoutDefault},
		{&c.WriteTimeout, WriteTimeoutDefault},
		{&c.IdleTimeout, IdleTimeoutDefault},
	} {
		if *d.field == 0 {
			*d.field = d.def
		}
	}
	return c
}

// validate checks a Config that already has its defaults.
func (c Config) validate() error {
	if c.DB == nil {
		return errors.New("orders config: DB is required")
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"RequestTimeout", c.RequestTimeout},
		{"ShutdownTimeout", c.ShutdownTimeout},
		{"ReadHeaderTimeout", c.ReadHeaderTimeout},
		{"ReadTimeout", c.ReadTimeout},
		{"WriteTimeout", c.WriteTimeout},
		{"IdleTimeout", c.IdleTimeout},
	} {
		if d.value < 0 {
			return fmt.Errorf("orders config: %s must not be negative, got %v", d.name, d.value)
		}
	}
	if c.WriteTimeout <= c.RequestTimeout {
		return fmt.Errorf("orders config: WriteTimeout (%v) must exceed RequestTimeout (%v), or answers are cut off",
			c.WriteTimeout, c.RequestTimeout)
	}
	return nil
}
