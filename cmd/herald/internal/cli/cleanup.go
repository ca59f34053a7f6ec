package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

// cleanupOptions are herald cleanup's flags: the store.CleanupRequest
// itself, which validate checks, naming the flags; run deletes.
type cleanupOptions struct {
	cmd *cobra.Command // which flags were given, and by which variable

	db  dbFlags
	req store.CleanupRequest
}

func newCleanupCommand() *cobra.Command {
	o := &cleanupOptions{}
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
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the cleanup's flags to cmd, bound to o.
func (o *cleanupOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	f := cmd.Flags()
	f.DurationVar(&o.req.Retention, "retention", 7*24*time.Hour, "keep published events this long (the replay window)")
	f.DurationVar(&o.req.InboxRetention, "inbox-retention", 0, "also delete consumed_events older than this (0: keep); must exceed --retention")
	f.IntVar(&o.req.BatchSize, "batch-size", relay.CleanupBatchSizeDefault, "rows per DELETE")
	f.DurationVar(&o.req.Pause, "pause", relay.CleanupPauseDefault, "wait between batches")
	env.bind(cmd)
}

// validate checks the request. Its fields are the flags: an error lists
// the flags given, and the variable where one gave the value
// (HERALD_CLEANUP_RETENTION is the relay's too, where 0 means "no
// cleanup").
func (o *cleanupOptions) validate() error {
	err := o.req.Validate()
	if err == nil {
		return nil
	}
	var given []string
	for _, name := range []string{"retention", "inbox-retention", "batch-size", "pause"} {
		if f := o.cmd.Flags().Lookup(name); f.Changed {
			given = append(given, flagSource(o.cmd, name)+"="+f.Value.String())
		}
	}
	if len(given) > 0 {
		return usageError{fmt.Errorf("%w (given: %s)", err, strings.Join(given, ", "))}
	}
	return usageError{err}
}

// run deletes in batches and says how much it deleted.
func (o *cleanupOptions) run(ctx context.Context) error {
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	rep, err := store.New(conn, o.db.dialect()).Cleanup(ctx, o.req)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.cmd.OutOrStdout(), "deleted %d published event(s), %d failure record(s), %d inbox row(s) in %d batch(es) (largest %d) in %v\n",
		rep.Events, rep.Failures, rep.Inbox, rep.Batches, rep.LargestBatch, time.Since(start).Round(time.Millisecond))
	return nil
}
