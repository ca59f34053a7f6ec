package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres/wal"
)

// newStreamCommand is `herald stream`: the WAL source's publication and
// replication slot (PostgreSQL).
func newStreamCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "Set up, inspect or remove the PostgreSQL change stream's slot and publication (--source wal)",
		Long: `herald relay --source wal streams outbox_events' inserts from a logical
replication slot (herald_<database> unless --slot names another) through a
publication of that table (herald_outbox). The relay creates both when they
are missing; these commands do it beforehand, show how much WAL the slot
keeps, and remove them when the stream is given up: a slot nobody reads
keeps the server's WAL forever (docs/postgres-stream.md,
docs/runbooks/growing-slot.md).

  setup   create the publication (the role must own outbox_events) and the
          slot (the role needs the REPLICATION attribute); creating a slot
          waits for the transactions open on the server to end
  status  the slots of the database: active or not, WAL retained, how far
          the confirmed position is behind, the checkpoint
  drop    remove the slot and the publication (refused while a --source
          wal relay leads, unless --force: it would create them again)

MariaDB/MySQL's binlog source needs none of this: its position is in the
server's binlogs, which the server's own expiry bounds.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newStreamSetupCommand(), newStreamStatusCommand(), newStreamDropCommand())
	return cmd
}

// streamFlags are the flags every `herald stream` command takes.
type streamFlags struct {
	db   dbFlags
	slot slotFlag
}

func (f *streamFlags) register(cmd *cobra.Command) envFlags {
	env := envFlags{}
	f.db.register(cmd, env)
	f.slot.register(cmd, env)
	return env
}

// open connects to a migrated PostgreSQL database and returns the pool
// and the reader's configuration.
func (f *streamFlags) open(ctx context.Context) (*sql.DB, wal.Config, error) {
	dsn, err := f.db.url()
	if err != nil {
		return nil, wal.Config{}, err
	}
	if !database.IsPostgres(dsn) {
		return nil, wal.Config{}, usageError{errors.New("herald stream: the WAL source's slot is PostgreSQL's; " +
			"MariaDB/MySQL's binlog source needs no setup (--source binlog)")}
	}
	cfg, err := walConfig(&f.db, f.slot, slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, wal.Config{}, err
	}
	conn, err := f.db.openMigrated(ctx)
	if err != nil {
		return nil, wal.Config{}, err
	}
	return conn, cfg, nil
}

func newStreamSetupCommand() *cobra.Command {
	var f streamFlags
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Create the WAL source's publication and replication slot where missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn, cfg, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			if err := wal.Check(ctx, conn); err != nil {
				return err
			}
			slot, created, err := wal.Setup(ctx, conn, cfg)
			if err != nil {
				return err
			}
			verb := "exists"
			if created {
				verb = "created"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "publication %s: publishes outbox_events' inserts\nslot %s: %s at %s (confirmed %s)\n",
				wal.PublicationDefault, slot.Name, verb, slot.RestartLSN, slot.ConfirmedFlushLSN)
			return nil
		},
	}
	f.register(cmd).bind(cmd)
	return cmd
}

// slotReport is `herald stream status --json`.
type slotReport struct {
	// Slot is the WAL source's slot name; Exists whether it exists.
	Slot   string `json:"slot"`
	Exists bool   `json:"exists"`
	// Checkpoint is the stream's checkpoint, Leader its leader ("" for
	// none).
	Checkpoint string                  `json:"checkpoint"`
	Leader     string                  `json:"leader,omitempty"`
	Slots      []store.ReplicationSlot `json:"replication_slots"`
}

func newStreamStatusCommand() *cobra.Command {
	var (
		f      streamFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the database's replication slots: active, WAL retained, confirmed position, the checkpoint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn, cfg, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			st := store.New(conn, f.db.dialect())
			slots, _, err := st.ReplicationSlots(ctx)
			if err != nil {
				return err
			}
			lease, _, err := st.Stream(ctx)
			if err != nil {
				return err
			}
			rep := slotReport{Slot: cfg.Slot, Checkpoint: lease.Position, Leader: lease.Leader, Slots: nonNil(slots)}
			for _, s := range slots {
				rep.Exists = rep.Exists || s.Name == cfg.Slot
			}
			if asJSON {
				return writeJSON(cmd, rep)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "checkpoint\t%s\t\n", orNone(rep.Checkpoint))
			fmt.Fprintf(w, "leader\t%s\t\n", orNone(rep.Leader))
			if !rep.Exists {
				fmt.Fprintf(w, "slot %s\t(missing)\tthe next --source wal leader sweeps the outbox, then creates it (or: herald stream setup)\n", cfg.Slot)
			}
			for _, s := range slots {
				name := s.Name
				if name != cfg.Slot {
					name += " (not herald's: --slot names " + cfg.Slot + ")"
				}
				fmt.Fprintf(w, "slot %s\t%s retained\t%s; confirmed %s\n", name, status.Bytes(s.RetainedBytes),
					status.SlotText(s), orNone(s.ConfirmedFlushLSN))
			}
			return w.Flush()
		},
	}
	f.register(cmd).bind(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}

func newStreamDropCommand() *cobra.Command {
	var (
		f     streamFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "drop",
		Short: "Remove the WAL source's replication slot and publication",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn, cfg, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			lease, now, err := store.New(conn, f.db.dialect()).Stream(ctx)
			if err != nil {
				return err
			}
			if lease.Leader != "" && lease.Expires.After(now) && !force {
				return fmt.Errorf("relay %s leads the stream: it would create the slot again (after sweeping the outbox); "+
					"stop the --source wal relays first, or give --force", lease.Leader)
			}
			slot, pub, err := wal.Drop(ctx, conn, cfg, true)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, d := range []struct {
				what    string
				dropped bool
			}{{"slot " + cfg.Slot, slot}, {"publication " + wal.PublicationDefault, pub}} {
				if d.dropped {
					fmt.Fprintf(out, "%s: dropped\n", d.what)
				} else {
					fmt.Fprintf(out, "%s: did not exist\n", d.what)
				}
			}
			return nil
		},
	}
	f.register(cmd).bind(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "drop even while a relay leads the stream (it sweeps, then creates them again)")
	return cmd
}
