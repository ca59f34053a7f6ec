package cli

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/store/postgres/wal"
)

// sourceWAL is `herald relay --source wal`: PostgreSQL's logical
// replication.
const sourceWAL = "wal"

// slotFlag is --slot, the WAL source's replication slot, shared by herald
// relay and herald stream.
type slotFlag struct{ name string }

func (f *slotFlag) register(cmd *cobra.Command, env envFlags) {
	cmd.Flags().StringVar(&f.name, "slot", "",
		"PostgreSQL: the logical replication slot of --source wal (default herald_<database>; slot names are unique in the whole server)")
	env["slot"] = "HERALD_SLOT"
}

// walConfig is the WAL reader's configuration for db's address and the
// slot flag; errors name the flag.
func walConfig(db *dbFlags, slot slotFlag, logger *slog.Logger) (wal.Config, error) {
	dsn, err := db.url()
	if err != nil {
		return wal.Config{}, err
	}
	cfg := wal.Config{URL: dsn, Slot: slot.name, Config: changestream.Config{Logger: logger},
		ConnOptions: postgres.ConnOptions{Password: os.Getenv(database.EnvPassword), PasswordFile: db.opts.PasswordFile}}
	if err := cfg.Validate(); err != nil {
		return wal.Config{}, flagError(err, map[string]string{"URL": "--database-url", "Slot": "--slot",
			"ConnOptions.Password": database.EnvPassword, "ConnOptions.PasswordFile": "--mysql-password-file"})
	}
	if cfg.Slot == "" {
		cfg.Slot = wal.DefaultSlot(dsn) // named in what the commands print
	}
	return cfg, nil
}

// newWALSource returns the WAL stream source of the database db was opened
// on, after checking that the server and herald's role can stream.
func newWALSource(ctx context.Context, conn *sql.DB, db *dbFlags, slot slotFlag, logger *slog.Logger) (changestream.Source, error) {
	cfg, err := walConfig(db, slot, logger)
	if err != nil {
		return nil, err
	}
	src, err := wal.NewSource(ctx, conn, cfg)
	if err != nil {
		return nil, fmt.Errorf("--source wal: %w", err)
	}
	return src, nil
}
