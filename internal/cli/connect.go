package cli

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/internal/localstack"
	"github.com/herald-outbox/herald/store/mysql"
)

// dbFlags is the --mysql-dsn flag (env HERALD_MYSQL_DSN) shared by every
// command that talks to the database.
type dbFlags struct {
	dsn string
}

func (f *dbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dsn, "mysql-dsn", localstack.MySQLDSN(),
		"MySQL/MariaDB DSN (env HERALD_MYSQL_DSN); UTC settings are added")
}

// open connects, naming the flag when the DSN cannot be parsed.
func (f *dbFlags) open(ctx context.Context) (*sql.DB, error) {
	if _, err := mysql.NormalizeDSN(f.dsn); err != nil {
		return nil, usageError{fmt.Errorf("--mysql-dsn: %w", err)}
	}
	return mysql.Open(ctx, f.dsn)
}
