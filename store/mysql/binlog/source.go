package binlog

import (
	"context"
	"database/sql"

	"github.com/herald-outbox/herald/store/changestream"
)

// Source is the changestream.Source of one MariaDB or MySQL database's
// binlog: the binlog relay's (`herald relay --source binlog`).
type Source struct {
	db  *sql.DB
	cfg Config
}

var _ changestream.Source = (*Source)(nil)

// NewSource checks cfg (Validate), then that the server and herald's user
// can stream (Check: the binlog settings and the replication grants, each
// problem named with its fix), and returns the source. db is a pool on
// the outbox's database, as cfg.DSN's user; the source and its readers
// borrow it for their queries, and the caller closes it after them.
func NewSource(ctx context.Context, db *sql.DB, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := Check(ctx, db); err != nil {
		return nil, err
	}
	// Defaults are taken by each Open: each reader draws a ServerID of its
	// own, so two at once do not make the server drop one.
	return &Source{db: db, cfg: cfg}, nil
}

// positions reads the binlog's positions from their text.
var positions = changestream.Positions[Position]{Kind: "binlog", Parse: ParsePosition}

// Head implements changestream.Source (the package's Head).
func (s *Source) Head(ctx context.Context) (string, error) {
	return changestream.Text(Head(ctx, s.db))
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
