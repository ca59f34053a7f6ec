package wal

import (
	"context"
	"database/sql"

	"github.com/herald-outbox/herald/store/changestream"
)

// Source is the changestream.Source of one PostgreSQL database's WAL,
// through cfg's replication slot: the WAL relay's (`herald relay --source
// wal`). It is a changestream.Sweeper too: the slot is created (or
// created anew after an invalidation) by SweepHead.
type Source struct {
	db  *sql.DB
	cfg Config
}

var (
	_ changestream.Source  = (*Source)(nil)
	_ changestream.Sweeper = (*Source)(nil)
)

// NewSource checks cfg (Validate), then that the server and herald's role
// can stream (Check: wal_level, the REPLICATION attribute, each problem
// named with its fix), and returns the source. db is a pool on the
// outbox's database, as cfg.URL's role; the source and its readers borrow
// it for their queries, and the caller closes it after them. The
// publication and the slot are created when the first sweep needs them
// (or beforehand by Setup, herald stream setup).
func NewSource(ctx context.Context, db *sql.DB, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := Check(ctx, db); err != nil {
		return nil, err
	}
	return &Source{db: db, cfg: cfg.withDefaults()}, nil
}

// positions reads the WAL's positions from their text.
var positions = changestream.Positions[Position]{Kind: "WAL", Parse: ParsePosition}

// Head implements changestream.Source (the package's Head).
func (s *Source) Head(ctx context.Context) (string, error) {
	return changestream.Text(Head(ctx, s.db))
}

// SweepHead implements changestream.Sweeper (the package's SweepHead).
func (s *Source) SweepHead(ctx context.Context) (string, error) {
	return changestream.Text(SweepHead(ctx, s.db, s.cfg))
}

// Open implements changestream.Source: a Reader from the position whose
// text from is (changestream.Positions.Checkpoint).
func (s *Source) Open(ctx context.Context, from string) (changestream.Reader, error) {
	pos, err := positions.Checkpoint(from)
	if err != nil {
		return nil, err
	}
	r, err := Open(ctx, s.db, s.cfg, pos)
	if err != nil {
		return nil, err // not a nil *Reader in the interface
	}
	return r, nil
}

// Reached implements changestream.Source (Position.Reached).
func (*Source) Reached(position, target string) (bool, error) {
	return positions.Reached(position, target)
}
