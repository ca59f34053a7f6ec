package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

func newCleanupCommand() *cobra.Command {
	var (
		db  dbFlags
		req store.CleanupRequest
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete published events older than the retention (the replay window), in small batches",
		Long: `Deletes only events that are published AND older than --retention, by
primary key in batches of --batch-size with --pause between them. Unpublished,
quarantined and discarded events are never touched, nor the failure records
(outbox_failures) of an unpublished event: those go once their event is
published or discarded and they are older than --retention. --inbox-retention also
prunes consumed_events; it must be longer than --retention, or a replayed
event could miss its inbox row and be applied twice.

A relay runs the same task in the background with --cleanup-retention.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := req.Validate(); err != nil {
				// The request's fields are the flags: say which one, and the
				// variable when it gave the value (HERALD_CLEANUP_RETENTION
				// is the relay's too, where 0 means "no cleanup").
				var flags []string
				for _, name := range []string{"retention", "inbox-retention", "batch-size", "pause"} {
					if f := cmd.Flags().Lookup(name); f.Changed {
						flags = append(flags, flagSource(cmd, name)+"="+f.Value.String())
					}
				}
				if len(flags) > 0 {
					return usageError{fmt.Errorf("%w (given: %s)", err, strings.Join(flags, ", "))}
				}
				return usageError{err}
			}
			conn, err := db.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			start := time.Now()
			rep, err := store.New(conn, db.dialect()).Cleanup(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d published event(s), %d failure record(s), %d inbox row(s) in %d batch(es) (largest %d) in %v\n",
				rep.Events, rep.Failures, rep.Inbox, rep.Batches, rep.LargestBatch, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	f := cmd.Flags()
	f.DurationVar(&req.Retention, "retention", 7*24*time.Hour, "keep published events this long (the replay window)")
	f.DurationVar(&req.InboxRetention, "inbox-retention", 0, "also delete consumed_events older than this (0: keep); must exceed --retention")
	f.IntVar(&req.BatchSize, "batch-size", relay.CleanupBatchSizeDefault, "rows per DELETE")
	f.DurationVar(&req.Pause, "pause", relay.CleanupPauseDefault, "wait between batches")
	env.bind(cmd)
	return cmd
}
