package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/migrations"
)

func newMigrateCommand() *cobra.Command {
	var db dbFlags
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
runs with the rights of the account that created it, so keep that account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			applied, err := migrations.Herald.Up(cmd.Context(), conn)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "schema is up to date; nothing applied")
				return nil
			}
			for _, v := range applied {
				fmt.Fprintf(cmd.OutOrStdout(), "applied migration %d\n", v)
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
			return w.Flush()
		},
	}
	for _, c := range []*cobra.Command{up, status} {
		env := envFlags{}
		db.register(c, env)
		env.bind(c)
	}
	cmd.AddCommand(up, status)
	return cmd
}
