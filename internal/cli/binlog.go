package cli

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/relay/binlogsource"
)

// Sources of `herald relay --source`.
const (
	sourcePoll   = "poll"
	sourceBinlog = "binlog"
)

// newBinlogSource returns the binlog stream source of the database db was
// opened on, after checking that the server and herald's user can stream.
func newBinlogSource(ctx context.Context, db *sql.DB, f *dbFlags, logger *slog.Logger) (relay.StreamSource, error) {
	conn, err := f.options().Config(f.dsn)
	if err != nil {
		return nil, flagError(err, mysqlFlagOfField)
	}
	src, err := binlogsource.New(ctx, db, conn.FormatDSN(), logger)
	if err != nil {
		return nil, fmt.Errorf("--source binlog: %w", err)
	}
	return src, nil
}
