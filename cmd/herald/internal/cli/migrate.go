package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/connector"
	"github.com/herald-outbox/herald/migrations"
)

// migrateOptions are the flags of herald migrate's commands: up, which
// alone takes --mapping, status and unmap. Each command is a method; the
// three share one set of flag values, since one of them runs.
type migrateOptions struct {
	cmd *cobra.Command // the command running (its RunE sets it): where it writes

	db      dbFlags
	mapping mappingFlags

	mapped *connector.Settings // what validateUp read from --mapping
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply or inspect herald's schema migrations",
	}
	o := &migrateOptions{}
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply pending migrations (a no-op when the schema is current)",
		Long: `Apply pending migrations (a no-op when the schema is current).

Migration 6 creates a trigger on outbox_events (the SQL contract: any writer,
any language, docs/writers.md). On MySQL/MariaDB with binary logging on, the
server allows that only to an account with SUPER or with
log_bin_trust_function_creators=1 (ERROR 1419 otherwise): migrate up checks it
before it changes anything, and names the statement that fixes it. The trigger
runs with the rights of the account that created it, so keep that account.

With --mapping (a Debezium connector's configuration, docs/from-debezium.md),
it then makes herald relay that connector's outbox table: a trigger copies
every row inserted into it into outbox_events, in the writer's transaction
(docs/design.md, section 10). The table, its columns and their types are
checked first; a mapping that does not fit changes nothing. Running it again
with another mapping replaces the trigger; herald migrate unmap removes it.
Creating the trigger needs the TRIGGER privilege on the table (MySQL/MariaDB)
or owning it (PostgreSQL).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmd = cmd
			if err := o.validateUp(); err != nil {
				return err
			}
			return o.up(cmd.Context())
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cmd = cmd
			return o.status(cmd.Context())
		},
	}
	unmap := &cobra.Command{
		Use:   "unmap <table>",
		Short: "Stop copying a foreign outbox table's inserts (herald migrate up --mapping added the copy)",
		Long: `Removes the trigger that copies a foreign outbox table's inserts into
outbox_events, and its mapping. Rows inserted from then on are not relayed by
herald; the copies already made stay in outbox_events and are published.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cmd = cmd
			return o.unmap(cmd.Context(), args[0])
		},
	}
	for _, c := range []*cobra.Command{up, status, unmap} {
		env := envFlags{}
		o.db.register(c, env)
		if c == up {
			o.mapping.register(c, env)
		}
		env.bind(c)
	}
	cmd.AddCommand(up, status, unmap)
	return cmd
}

// validateUp reads and checks --mapping (and --mapping-set) before up
// changes anything.
func (o *migrateOptions) validateUp() error {
	var err error
	if o.mapped, err = o.mapping.settings(); err != nil {
		return err
	}
	if o.mapped != nil {
		if err := o.mapped.Mapping.Validate(); err != nil {
			return usageError{fmt.Errorf("--mapping: %w", err)}
		}
	}
	return nil
}

// up applies herald's pending migrations, then installs --mapping's copy
// of a foreign outbox table, and says what it did.
func (o *migrateOptions) up(ctx context.Context) error {
	conn, err := o.db.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if o.mapped != nil {
		// Before any migration: a mapping that does not fit changes nothing.
		if err := migrations.CheckMapping(ctx, conn, o.mapped.Mapping); err != nil {
			return o.mapped.NameProperties(err)
		}
	}
	applied, err := migrations.Herald.Up(ctx, conn)
	if err != nil {
		return err
	}
	out := o.cmd.OutOrStdout()
	if len(applied) == 0 {
		fmt.Fprintln(out, "schema is up to date; nothing applied")
	}
	for _, v := range applied {
		fmt.Fprintf(out, "applied migration %d\n", v)
	}
	if o.mapped == nil {
		return nil
	}
	if err := migrations.InstallMapping(ctx, conn, o.mapped.Mapping); err != nil {
		return o.mapped.NameProperties(err)
	}
	m := o.mapped.Mapping
	fmt.Fprintf(out, "inserts into %s are copied into outbox_events by trigger %s: id from %s, aggregate type from %s, "+
		"aggregate id from %s, event type from %s, payload from %s", m.Table, migrations.TriggerName(m.Table),
		m.ID, m.AggregateType, m.AggregateID, m.EventType, m.Payload)
	for _, opt := range []struct{ what, col string }{{"time", m.Timestamp}, {"schema version", m.SchemaVersion}, {"headers", m.Headers}} {
		if opt.col != "" {
			fmt.Fprintf(out, ", %s from %s", opt.what, opt.col)
		}
	}
	if len(m.Fields) > 0 {
		fmt.Fprintf(out, "; fields %s", strings.Join(m.Fields, ", "))
	}
	fmt.Fprintln(out)
	for _, key := range o.mapped.Ignored {
		fmt.Fprintf(out, "ignored: %s (it changes nothing herald sends)\n", key)
	}
	return nil
}

// status prints every migration and whether it is applied, and the
// foreign tables whose inserts are copied.
func (o *migrateOptions) status(ctx context.Context) error {
	conn, err := o.db.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st, err := migrations.Herald.Status(ctx, conn)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(o.cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "database version %d, binary version %d\n", st.Current, st.Latest)
	fmt.Fprintln(w, "VERSION\tMIGRATION\tAPPLIED AT")
	for _, m := range st.Migrations {
		applied := "pending"
		if !m.AppliedAt.IsZero() {
			applied = m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		fmt.Fprintf(w, "%d\t%s\t%s\n", m.Version, m.Name, applied)
	}
	if st.Current > st.Latest {
		fmt.Fprintf(w, "WARNING: the database is newer than this binary (%d > %d)\n", st.Current, st.Latest)
	}
	if st.Current >= mappingsVersion {
		mappings, err := migrations.ReadMappings(ctx, conn)
		if err != nil {
			return err
		}
		for _, table := range slices.Sorted(maps.Keys(mappings)) {
			im := mappings[table]
			fmt.Fprintf(w, "foreign table %s: copied by trigger %s since %s\n", table, im.Trigger,
				im.InstalledAt.Format("2006-01-02 15:04:05Z"))
		}
	}
	return w.Flush()
}

// unmap removes the copy of table's inserts that up --mapping installed.
func (o *migrateOptions) unmap(ctx context.Context, table string) error {
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = migrations.DropMapping(ctx, conn, table)
	if errors.Is(err, migrations.ErrNoSuchMapping) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.cmd.OutOrStdout(), "inserts into %s are no longer copied into outbox_events\n", table)
	return nil
}

// mappingsVersion is the migration that adds outbox_mappings.
const mappingsVersion = 8
