// Package walsource is the WAL relay's stream source: it adapts package
// store/postgres/wal (PostgreSQL logical replication, pgoutput) to
// relay.StreamSource, so package relay itself depends on no database.
//
//	src, err := walsource.New(ctx, db, wal.Config{URL: url, Logger: logger}) // checks settings and the role
//	cfg := relay.Config{Stream: src}
package walsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/postgres/wal"
)

// Source is a relay.StreamSource over the WAL of the database db was
// opened on, through cfg's replication slot.
type Source struct {
	db  *sql.DB
	cfg wal.Config
}

var (
	_ relay.StreamSource  = Source{}
	_ relay.StreamSweeper = Source{}
)

// New checks that the server and herald's role can stream (wal_level,
// the REPLICATION attribute, each problem named with its fix) and returns
// the source. db is a pool on the outbox's database, cfg.URL its address.
// The publication and the slot are created when the first sweep needs
// them (or beforehand by herald stream setup).
func New(ctx context.Context, db *sql.DB, cfg wal.Config) (Source, error) {
	if err := cfg.Validate(); err != nil {
		return Source{}, err
	}
	if err := wal.Check(ctx, db); err != nil {
		return Source{}, err
	}
	return Source{db: db, cfg: cfg}, nil
}

// Head implements relay.StreamSource.
func (s Source) Head(ctx context.Context) (string, error) {
	p, err := wal.Head(ctx, s.db)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// SweepHead implements relay.StreamSweeper: the slot is created (or
// created anew after an invalidation) here.
func (s Source) SweepHead(ctx context.Context) (string, error) {
	p, err := wal.SweepHead(ctx, s.db, s.cfg)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// Open implements relay.StreamSource.
func (s Source) Open(ctx context.Context, from string) (relay.StreamReader, error) {
	pos, err := wal.ParsePosition(from)
	if err != nil {
		// A binlog position left by a relay of the other source: nothing of
		// it applies here.
		return nil, fmt.Errorf("%w: the stream's checkpoint %q is not a WAL position: %v", relay.ErrStreamPositionGone, from, err)
	}
	r, err := wal.Open(ctx, s.cfg, s.db, pos)
	if err != nil {
		return nil, streamError(err)
	}
	return reader{r}, nil
}

// Reached implements relay.StreamSource.
func (Source) Reached(position, target string) (bool, error) {
	p, err := wal.ParsePosition(position)
	if err != nil {
		return false, err
	}
	t, err := wal.ParsePosition(target)
	if err != nil {
		return false, err
	}
	return p.Reached(t), nil
}

// reader adapts wal.Reader to relay.StreamReader and relay.StreamConfirmer.
type reader struct{ r *wal.Reader }

var _ relay.StreamConfirmer = reader{}

func (w reader) Next(ctx context.Context) (relay.StreamTx, error) {
	tx, err := w.r.Next(ctx)
	if err != nil {
		return relay.StreamTx{}, streamError(err)
	}
	return relay.StreamTx{Events: tx.Events, Position: tx.Position.String()}, nil
}

// Confirm implements relay.StreamConfirmer: the relay saved position as
// its checkpoint, so the slot may forget what lies before it.
func (w reader) Confirm(position string) {
	if p, err := wal.ParsePosition(position); err == nil {
		w.r.Confirm(p)
	}
}

func (w reader) Lag() (int64, float64) { return w.r.Lag() }
func (w reader) Close() error          { return w.r.Close() }

// streamError says a position the slot cannot stream from in the relay's
// terms.
func streamError(err error) error {
	if errors.Is(err, wal.ErrPositionGone) {
		return fmt.Errorf("%w: %v", relay.ErrStreamPositionGone, err)
	}
	return err
}
