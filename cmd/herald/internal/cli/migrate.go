package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/migrations"
)

func newMigrateCommand() *cobra.Command {
	var (
		db      dbFlags
		mapping mappingFlags
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply or inspect herald's schema migrations",
	}
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
			mapped, err := mapping.settings()
			if err != nil {
				return err
			}
			if mapped != nil {
				if err := mapped.Mapping.Validate(); err != nil {
					return usageError{fmt.Errorf("--mapping: %w", err)}
				}
			}
			conn, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			if mapped != nil {
				// Before any migration: a mapping that does not fit changes nothing.
				if err := migrations.CheckMapping(cmd.Context(), conn, mapped.Mapping); err != nil {
					return mapped.NameProperties(err)
				}
			}
			applied, err := migrations.Herald.Up(cmd.Context(), conn)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(applied) == 0 {
				fmt.Fprintln(out, "schema is up to date; nothing applied")
			}
			for _, v := range applied {
				fmt.Fprintf(out, "applied migration %d\n", v)
			}
			if mapped == nil {
				return nil
			}
			if err := migrations.InstallMapping(cmd.Context(), conn, mapped.Mapping); err != nil {
				return mapped.NameProperties(err)
			}
			m := mapped.Mapping
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
			for _, key := range mapped.Ignored {
				fmt.Fprintf(out, "ignored: %s (it changes nothing herald sends)\n", key)
			}
			return nil
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "List migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			st, err := migrations.Herald.Status(cmd.Context(), conn)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
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
				mappings, err := migrations.ReadMappings(cmd.Context(), conn)
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
			conn, err := db.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			err = migrations.DropMapping(cmd.Context(), conn, args[0])
			if errors.Is(err, migrations.ErrNoSuchMapping) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "inserts into %s are no longer copied into outbox_events\n", args[0])
			return nil
		},
	}
	for _, c := range []*cobra.Command{up, status, unmap} {
		env := envFlags{}
		db.register(c, env)
		if c == up {
			mapping.register(c, env)
		}
		env.bind(c)
	}
	cmd.AddCommand(up, status, unmap)
	return cmd
}

// mappingsVersion is the migration that adds outbox_mappings.
const mappingsVersion = 8
