package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// Sources of `herald relay --source`.
const (
	sourcePoll   = "poll"
	sourceBinlog = "binlog"
)

// binlogSource adapts package store/mysql/binlog to the relay's stream
// source, so the relay depends on no dialect.
type binlogSource struct {
	db  *sql.DB
	cfg binlog.Config
}

// newBinlogSource checks that the server and herald's user can stream (the
// binlog settings and the grants, each named with its fix) and returns the
// source on the database db was opened on.
func newBinlogSource(ctx context.Context, db *sql.DB, f *dbFlags, logger *slog.Logger) (relay.StreamSource, error) {
	if err := binlog.Check(ctx, db); err != nil {
		return nil, fmt.Errorf("--source binlog: %w", err)
	}
	conn, err := f.options().Config(f.dsn)
	if err != nil {
		return nil, flagError(err, mysqlFlagOfField)
	}
	cfg := binlog.Config{DSN: conn.FormatDSN(), Logger: logger}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--source binlog: %w", err)
	}
	return binlogSource{db: db, cfg: cfg}, nil
}

// Head implements relay.StreamSource.
func (s binlogSource) Head(ctx context.Context) (string, error) {
	p, err := binlog.Head(ctx, s.db)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// Open implements relay.StreamSource.
func (s binlogSource) Open(ctx context.Context, from string) (relay.StreamReader, error) {
	pos, err := binlog.ParsePosition(from)
	if err != nil {
		return nil, fmt.Errorf("the stream's checkpoint %q: %w", from, err)
	}
	r, err := binlog.Open(ctx, s.cfg, pos)
	if err != nil {
		return nil, streamError(err)
	}
	return binlogReader{r}, nil
}

// binlogReader adapts binlog.Reader to relay.StreamReader.
type binlogReader struct{ r *binlog.Reader }

func (b binlogReader) Next(ctx context.Context) (relay.StreamTx, error) {
	tx, err := b.r.Next(ctx)
	if err != nil {
		return relay.StreamTx{}, streamError(err)
	}
	return relay.StreamTx{Events: tx.Events, Position: tx.Position.String()}, nil
}

func (b binlogReader) Lag() (int64, float64) { return b.r.Lag() }
func (b binlogReader) Close() error         { return b.r.Close() }

// streamError says a purged position in the relay's terms.
func streamError(err error) error {
	if errors.Is(err, binlog.ErrPositionPurged) {
		return fmt.Errorf("%w: %v", relay.ErrStreamPositionGone, err)
	}
	return err
}
