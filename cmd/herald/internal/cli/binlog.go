package cli

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// Sources of `herald relay --source`.
const (
	sourcePoll   = "poll"
	sourceBinlog = "binlog"
)

// newBinlogSource returns the binlog stream source of the database db was
// opened on, after checking that the server and herald's user can stream.
func newBinlogSource(ctx context.Context, db *sql.DB, f *dbFlags, logger *slog.Logger) (changestream.Source, error) {
	// The address url chose: the flag's, its alias's or the default, as
	// the pool's (f.dsn alone was empty for the latter two).
	dsn, err := f.url()
	if err != nil {
		return nil, err
	}
	conn, err := f.options().Config(dsn)
	if err != nil {
		return nil, flagError(err, mysqlFlagOfField)
	}
	src, err := binlog.NewSource(ctx, db, binlog.Config{DSN: conn.FormatDSN(), Config: changestream.Config{Logger: logger}})
	if err != nil {
		return nil, fmt.Errorf("--source binlog: %w", err)
	}
	return src, nil
}
