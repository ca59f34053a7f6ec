package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

func newQuarantineCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "Inspect, retry or discard quarantined (poison) events",
		Long: `An event is quarantined when its publication can never succeed as it is
(too large, not encodable, no topic route) or failed --max-attempts times.
Later events of its aggregate are held behind it (order policy "hold").

  herald quarantine list [--class too_large] [--aggregate-type order] ...
  herald quarantine show EVENT_ID
  herald quarantine retry EVENT_ID... | --class broker_unavailable ...   (after fixing the cause)
  herald quarantine discard EVENT_ID... --reason "why"

retry and discard are idempotent, record who/when/why in outbox_audit, and
show what they would change with --dry-run.`,
	}
	cmd.AddCommand(newQuarantineListCommand(), newQuarantineShowCommand(),
		newQuarantineResolveCommand("retry"), newQuarantineResolveCommand("discard"))
	return cmd
}

// quarantineFilterFlags are the selection flags of list, retry and discard.
type quarantineFilterFlags struct {
	aggregateType, aggregateID, eventType, class string
	since, until                                 string
	limit                                        int
}

func (f *quarantineFilterFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.aggregateType, "aggregate-type", "", "only this aggregate type")
	fl.StringVar(&f.aggregateID, "aggregate-id", "", "only this aggregate id")
	fl.StringVar(&f.eventType, "event-type", "", "only this event type")
	fl.StringVar(&f.class, "class", "", "only this error class: "+strings.Join(kafka.Classes(), ", "))
	fl.StringVar(&f.since, "since", "", "quarantined at or after (RFC 3339, or a duration ago like 2h)")
	fl.StringVar(&f.until, "until", "", "quarantined before (RFC 3339, or a duration ago)")
	fl.IntVar(&f.limit, "limit", 100, "at most this many events")
}

func (f *quarantineFilterFlags) filter(now time.Time) (store.QuarantineFilter, error) {
	since, err := parseInstant("--since", f.since, now)
	if err != nil {
		return store.QuarantineFilter{}, err
	}
	until, err := parseInstant("--until", f.until, now)
	if err != nil {
		return store.QuarantineFilter{}, err
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return store.QuarantineFilter{}, usageError{fmt.Errorf("--since (%s) must be before --until (%s)",
			since.Format(time.RFC3339), until.Format(time.RFC3339))}
	}
	if f.limit < 1 {
		return store.QuarantineFilter{}, usageError{fmt.Errorf("--limit: must be at least 1, got %d", f.limit)}
	}
	if f.class != "" && !slices.Contains(kafka.Classes(), f.class) {
		// A filter that matches nothing would report "0 of 0 changed" as
		// if nothing were quarantined.
		return store.QuarantineFilter{}, usageError{fmt.Errorf("--class: unknown error class %q; the classes are %s",
			f.class, strings.Join(kafka.Classes(), ", "))}
	}
	return store.QuarantineFilter{AggregateType: f.aggregateType, AggregateID: f.aggregateID,
		EventType: f.eventType, ErrorClass: f.class, Since: since, Until: until, Limit: f.limit}, nil
}

func (f *quarantineFilterFlags) any() bool {
	return f.aggregateType != "" || f.aggregateID != "" || f.eventType != "" || f.class != "" || f.since != "" || f.until != ""
}

// parseInstant reads an RFC 3339 time or a duration before now; "" is zero.
func parseInstant(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, usageError{fmt.Errorf("%s: %q: a duration counts back from now and must not be negative", flag, v)}
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usageError{fmt.Errorf("%s: %q is neither RFC 3339 nor a duration", flag, v)}
	}
	return t, nil
}

// quarantineListOptions are herald quarantine list's flags.
type quarantineListOptions struct {
	cmd *cobra.Command // where the command writes

	db     dbFlags
	sel    quarantineFilterFlags
	asJSON bool

	filter store.QuarantineFilter // what validate read
}

func newQuarantineListCommand() *cobra.Command {
	o := &quarantineListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List quarantined events, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(time.Now()); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the list's flags to cmd, bound to o.
func (o *quarantineListOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.sel.register(cmd)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON")
	env.bind(cmd)
}

// validate checks the filter, its times relative to now.
func (o *quarantineListOptions) validate(now time.Time) error {
	var err error
	o.filter, err = o.sel.filter(now)
	return err
}

// run prints the quarantined events the filter selects, as a table or JSON.
func (o *quarantineListOptions) run(ctx context.Context) error {
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	list, err := store.New(conn, o.db.dialect()).ListQuarantined(ctx, o.filter)
	if err != nil {
		return err
	}
	if o.asJSON {
		return writeJSON(o.cmd, nonNil(list))
	}
	w := tabwriter.NewWriter(o.cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "EVENT ID\tAGGREGATE\tSEQ\tTYPE\tCLASS\tATTEMPTS\tHELD BEHIND\tQUARANTINED AT\tLAST ERROR")
	for _, q := range list {
		fmt.Fprintf(w, "%s\t%s/%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\n", q.ID, q.AggregateType, q.AggregateID,
			q.AggregateSeq, q.EventType, q.ErrorClass, q.Attempts, q.HeldBehind,
			q.QuarantinedAt.Format(time.RFC3339), shorten(q.LastError, 60))
	}
	fmt.Fprintf(w, "%d quarantined event(s)\n", len(list))
	return w.Flush()
}

func newQuarantineShowCommand() *cobra.Command {
	var db dbFlags
	cmd := &cobra.Command{
		Use:   "show EVENT_ID",
		Short: "Print an event, its failed attempts, last error and audit trail (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := db.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			d, err := store.New(conn, db.dialect()).ShowEvent(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			d.Failures, d.Audit = nonNil(d.Failures), nonNil(d.Audit)
			return writeJSON(cmd, d)
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	env.bind(cmd)
	return cmd
}

// quarantineResolveOptions are the flags of herald quarantine retry and
// discard (action). validate checks the events named and the filter; run
// resolves each event, audited, and says what changed.
type quarantineResolveOptions struct {
	cmd    *cobra.Command // where the command writes
	action string         // "retry" or "discard"

	db     dbFlags
	sel    quarantineFilterFlags
	reason string
	actor  string
	dryRun bool

	// What validate read, for run.
	ids    []string // the events named, or none for a filter
	filter store.QuarantineFilter
}

func newQuarantineResolveCommand(action string) *cobra.Command {
	o := &quarantineResolveOptions{action: action}
	short := "Put quarantined events back in line; their held successors follow in order"
	if action == "discard" {
		short = "Give quarantined events up for good (needs --reason); their successors proceed"
	}
	cmd := &cobra.Command{
		Use:   action + " [EVENT_ID...]",
		Short: short,
		Args:  cobra.ArbitraryArgs, // none with a filter, one or more without: validate checks
		RunE: func(cmd *cobra.Command, ids []string) error {
			if err := o.validate(ids, time.Now()); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the command's flags to cmd, bound to o.
func (o *quarantineResolveOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.sel.register(cmd)
	cmd.Flags().StringVar(&o.reason, "reason", "", "why (required for discard; kept in outbox_audit)")
	cmd.Flags().StringVar(&o.actor, "actor", defaultActor(), "who is acting, for the audit trail")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "show what would change; write nothing")
	env.bind(cmd)
}

// validate checks that the events are named one way (ids or a filter), a
// discard's reason and the actor; the filter's times are relative to now.
func (o *quarantineResolveOptions) validate(ids []string, now time.Time) error {
	if len(ids) > 0 && o.sel.any() {
		return usageError{fmt.Errorf("give event ids or filter flags, not both")}
	}
	if len(ids) == 0 && !o.sel.any() {
		return usageError{fmt.Errorf("name the events: event ids, or a filter such as --class or --aggregate-id")}
	}
	if o.action == "discard" && strings.TrimSpace(o.reason) == "" {
		return usageError{fmt.Errorf("--reason: discard needs a reason (it is kept in the audit trail)")}
	}
	if strings.TrimSpace(o.actor) == "" {
		return usageError{fmt.Errorf("--actor: must not be empty")}
	}
	var err error
	o.ids = ids
	o.filter, err = o.sel.filter(now)
	return err
}

// run retries or discards each event named (the filter's, listed first),
// printing one line per event and a total; a retry of a discarded event
// fails the command once the others are done.
func (o *quarantineResolveOptions) run(ctx context.Context) error {
	out := o.cmd.OutOrStdout()
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st := store.New(conn, o.db.dialect())
	ids := o.ids
	if len(ids) == 0 {
		list, err := st.ListQuarantined(ctx, o.filter)
		if err != nil {
			return err
		}
		for _, q := range list {
			ids = append(ids, q.ID)
		}
	}
	resolve := st.Retry
	if o.action == "discard" {
		resolve = st.Discard
	}
	changed := 0
	var final []string
	for _, id := range ids {
		ch, err := resolve(ctx, id, o.actor, o.reason, o.dryRun)
		if err != nil {
			return err
		}
		if o.action == "retry" && ch.State == "discarded" {
			// A discard is final: saying "unchanged" would read as if the
			// event were already back in line.
			fmt.Fprintf(out, "%s: discarded; a discarded event cannot be retried\n", id)
			final = append(final, id)
			continue
		}
		verb := map[bool]string{true: o.action, false: "unchanged"}[ch.Changed]
		if o.dryRun && ch.Changed {
			verb = "would " + o.action
		}
		if ch.Changed {
			changed++
		}
		fmt.Fprintf(out, "%s: %s (now %s; %d held event(s) released)\n", id, verb, ch.State, ch.Released)
	}
	fmt.Fprintf(out, "%d of %d event(s) %s\n", changed, len(ids),
		map[bool]string{true: "would change (dry run)", false: "changed"}[o.dryRun])
	if len(final) > 0 {
		return fmt.Errorf("%d event(s) are discarded and cannot be retried: %s", len(final), strings.Join(final, ", "))
	}
	return nil
}

func defaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func writeJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// nonNil returns s, or an empty slice for nil, so JSON shows [] rather than
// null for an empty list.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
