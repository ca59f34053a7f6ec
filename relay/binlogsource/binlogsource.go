// Package binlogsource is the binlog relay's stream source: it adapts
// package store/mysql/binlog (MariaDB/MySQL only) to relay.StreamSource,
// so package relay itself depends on no database.
//
//	src, err := binlogsource.New(ctx, db, dsn, logger) // checks settings and grants
//	cfg := relay.Config{Stream: src}
package binlogsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// Source is a relay.StreamSource over the binlog of the database db was
// opened on.
type Source struct {
	db  *sql.DB
	cfg binlog.Config
}

var _ relay.StreamSource = Source{}

// New checks that the server and the user of dsn can stream (the binlog
// settings and the replication grants, each problem named with its fix)
// and returns the source. dsn is go-sql-driver's, naming the outbox's
// database, with its password (and TLS configuration, registered with the
// driver) in place; db is a pool on the same database.
func New(ctx context.Context, db *sql.DB, dsn string, logger *slog.Logger) (Source, error) {
	return NewWithConfig(ctx, db, binlog.Config{DSN: dsn, Logger: logger})
}

// NewWithConfig is New with every setting of the reader (cfg.DSN as New's
// dsn).
func NewWithConfig(ctx context.Context, db *sql.DB, cfg binlog.Config) (Source, error) {
	if err := binlog.Check(ctx, db); err != nil {
		return Source{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Source{}, err
	}
	return Source{db: db, cfg: cfg}, nil
}

// Head implements relay.StreamSource.
func (s Source) Head(ctx context.Context) (string, error) {
	p, err := binlog.Head(ctx, s.db)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// Open implements relay.StreamSource.
func (s Source) Open(ctx context.Context, from string) (relay.StreamReader, error) {
	pos, err := binlog.ParsePosition(from)
	if err != nil {
		return nil, fmt.Errorf("the stream's checkpoint %q: %w", from, err)
	}
	r, err := binlog.Open(ctx, s.cfg, pos)
	if err != nil {
		return nil, streamError(err)
	}
	return reader{r}, nil
}

// Reached implements relay.StreamSource.
func (Source) Reached(position, target string) (bool, error) {
	p, err := binlog.ParsePosition(position)
	if err != nil {
		return false, err
	}
	t, err := binlog.ParsePosition(target)
	if err != nil {
		return false, err
	}
	return p.Reached(t)
}

// reader adapts binlog.Reader to relay.StreamReader.
type reader struct{ r *binlog.Reader }

func (b reader) Next(ctx context.Context) (relay.StreamTx, error) {
	tx, err := b.r.Next(ctx)
	if err != nil {
		return relay.StreamTx{}, streamError(err)
	}
	return relay.StreamTx{Events: tx.Events, Position: tx.Position.String()}, nil
}

func (b reader) Lag() (int64, float64) { return b.r.Lag() }
func (b reader) Close() error          { return b.r.Close() }

// streamError says a purged position in the relay's terms.
func streamError(err error) error {
	if errors.Is(err, binlog.ErrPositionPurged) {
		return fmt.Errorf("%w: %v", relay.ErrStreamPositionGone, err)
	}
	return err
}
