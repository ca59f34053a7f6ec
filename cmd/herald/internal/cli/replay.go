package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

// replayOptions are herald replay's flags. validate checks them before the
// command touches the database or Kafka, each error naming its flag; run
// resumes or starts the replay saved under --checkpoint.
type replayOptions struct {
	cmd *cobra.Command // where the command writes

	db         dbFlags
	kafka      kafkaFlags
	sel        store.ReplaySelection
	from, to   string
	routing    routeFlags
	suffix     string
	checkpoint string
	rate       int
	maxRecord  int
	mapping    mappingFlags
	records    recordFlags

	// What validate read, for run.
	routes       map[string]string
	defaultTopic string
	formats      record.FormatConfig
	lives        []string // the live topics replayed
	kafkaOpts    []kgo.Opt
}

func newReplayCommand() *cobra.Command {
	o := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Re-publish retained events to a separate replay topic, rate limited and resumable",
		Long: `Re-publishes published events still retained in the outbox (see herald
cleanup) that were added between --from and --to, optionally only one
aggregate type, aggregate or event type, to a SEPARATE topic: the live topic's
name plus --suffix (default .replay), created like the live topic if missing.
Records keep their event ids, keys and per-aggregate order, so a consumer
group reading the replay topic deduplicates against its inbox. They are in
the relay's record format (--record-format, and --mapping for the debezium
format's settings, as for herald relay); with the debezium format for
every aggregate type, replay one aggregate type at a time (--aggregate-type):
its topic follows from it.

At most --rate records per second. Progress is saved under --checkpoint after
every acknowledged page: running the same command again resumes (with the
time range saved at the start when --from/--to are durations); a finished
replay does nothing. The same checkpoint with another range or other filters
is refused: use a new checkpoint name for a new replay.

Consumer-side replay (a new consumer group from a timestamp) is an option of
the consumers themselves; see docs/runbooks/replay.md.`,
		Args: cobra.NoArgs,
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

// register adds the replay's flags to cmd, bound to o.
func (o *replayOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "replay events added at or after (RFC 3339, or a duration ago like 6h)")
	f.StringVar(&o.to, "to", "0s", "replay events added before (RFC 3339, or a duration ago; default now)")
	f.StringVar(&o.sel.AggregateType, "aggregate-type", "", "only this aggregate type")
	f.StringVar(&o.sel.AggregateID, "aggregate-id", "", "only this aggregate (needs --aggregate-type)")
	f.StringVar(&o.sel.EventType, "event-type", "", "only this event type")
	o.routing.register(cmd, env)
	o.mapping.register(cmd, env)
	o.records.register(cmd, env)
	f.StringVar(&o.suffix, "suffix", relay.ReplayTopicSuffix, "replay topic = live topic + suffix")
	f.StringVar(&o.checkpoint, "checkpoint", "", "name under which progress is saved (required)")
	f.IntVar(&o.rate, "rate", relay.ReplayRateDefault, "most records per second")
	maxRecordBytesFlag(cmd, env, &o.maxRecord)
	env.bind(cmd)
}

// validate checks the flags, with --from and --to relative to now, and
// keeps what it read for run. Settings that can never work stop the
// command before it touches the database or Kafka.
func (o *replayOptions) validate(now time.Time) error {
	var err error
	if o.sel.From, err = parseInstant("--from", o.from, now); err != nil {
		return err
	}
	if o.sel.To, err = parseInstant("--to", o.to, now); err != nil {
		return err
	}
	if err := o.sel.Validate(); err != nil {
		return usageError{err}
	}
	if err := store.ValidateCheckpointName(o.checkpoint); err != nil {
		return usageError{fmt.Errorf("--checkpoint: %w", err)}
	}
	if o.rate < 1 {
		return usageError{fmt.Errorf("--rate: must be at least 1 record/s, got %d", o.rate)}
	}
	if o.suffix == "" {
		return usageError{fmt.Errorf("--suffix: must not be empty: a replay never goes to the live topic")}
	}
	if err := kafka.ValidateMaxRecordBytes(o.maxRecord); err != nil {
		return usageError{fmt.Errorf("--max-record-bytes: %w", err)}
	}
	if o.routes, o.defaultTopic, err = o.routing.parse(); err != nil {
		return err
	}
	if o.formats, err = o.records.formatConfig(&o.mapping); err != nil {
		return err
	}
	o.lives, err = relay.ReplayTopics(o.config())
	switch {
	case errors.Is(err, relay.ErrReplayNeedsAggregateType):
		return usageError{fmt.Errorf("--record-format debezium: %w (--aggregate-type)", err)}
	case err != nil:
		return usageError{fmt.Errorf("--aggregate-type: %w", err)}
	}
	for _, live := range o.lives {
		if err := kafka.ValidateTopicName(live + o.suffix); err != nil {
			return usageError{fmt.Errorf("--suffix: the replay topic of %s: %w", live, err)}
		}
	}
	o.kafkaOpts, err = o.kafka.options()
	return err
}

// config is the replay the flags ask for (progress reporting aside).
func (o *replayOptions) config() relay.ReplayConfig {
	return relay.ReplayConfig{
		Checkpoint: o.checkpoint, Selection: o.sel, Topics: o.routes, DefaultTopic: o.defaultTopic,
		Records: o.formats, Rate: o.rate, ResumeSavedRange: o.resumesSavedRange(),
		TopicFor: func(live string) string { return live + o.suffix },
	}
}

// resumesSavedRange says whether a resumed replay takes the time range saved
// at its start: --from or --to relative to now moves with the clock.
func (o *replayOptions) resumesSavedRange() bool { return isDuration(o.from) || isDuration(o.to) }

// run loads the checkpoint (refusing one saved for another replay), says
// so when it finished, else creates the replay topics and replays the
// rest, saving progress after every acknowledged page.
func (o *replayOptions) run(ctx context.Context) error {
	out, errOut := o.cmd.OutOrStdout(), o.cmd.ErrOrStderr()
	conn, err := o.db.openMigrated(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	st := store.New(conn, o.db.dialect())
	saved, err := st.LoadReplayCheckpoint(ctx, o.checkpoint, o.sel, o.resumesSavedRange())
	if errors.Is(err, store.ErrCheckpointMismatch) {
		return usageError{fmt.Errorf("--checkpoint %s: %w; use a new --checkpoint name for a new replay", o.checkpoint, err)}
	}
	if err != nil {
		return err
	}
	if err := checkSavedRange(o.checkpoint, o.from, o.to, o.sel, saved.Selection); err != nil {
		return err
	}
	if saved.Finished {
		fmt.Fprintf(out, "replay %q already finished: %d event(s) added from %s to %s; "+
			"0 event(s) this run (use a new --checkpoint name for a new replay)\n", o.checkpoint, saved.Replayed,
			saved.Selection.From.Format(time.RFC3339), saved.Selection.To.Format(time.RFC3339))
		return nil
	}
	adm, err := o.kafka.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	for _, live := range o.lives {
		if err := ensureReplayTopic(ctx, errOut, adm, live, live+o.suffix); err != nil {
			return err
		}
	}
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: o.kafka.brokers, ClientID: "herald-replay",
		MaxRecordBytes: o.maxRecord, ClientOptions: o.kafkaOpts, RecordTimestamps: o.formats.Timestamped()})
	if err != nil {
		return err
	}
	defer producer.Close()
	start := time.Now()
	cfg := o.config()
	cfg.Progress = func(n int64) {
		fmt.Fprintf(errOut, "\rreplayed %d event(s) (%.0f/s)   ", n, float64(n)/max(time.Since(start).Seconds(), 0.001))
	}
	rp, err := relay.NewReplayer(cfg, st, producer)
	if err != nil {
		return usageError{err}
	}
	n, err := rp.Run(ctx)
	fmt.Fprintln(errOut)
	switch {
	case errors.Is(err, relay.ErrCheckpointNotSaved):
		return err
	case err != nil:
		return fmt.Errorf("%w (progress is saved after every page; rerun the same command to resume)", err)
	}
	fmt.Fprintf(out, "replay %q finished: %d event(s) this run in %v\n", o.checkpoint, n, time.Since(start).Round(time.Millisecond))
	return nil
}

// isDuration says whether a --from/--to value is relative to now.
func isDuration(v string) bool {
	_, err := time.ParseDuration(v)
	return err == nil
}

// checkSavedRange refuses to resume a checkpoint for another time range
// than the one it was saved with. A range given relative to now (--from
// 6h) moves with the clock, so its ends cannot be compared with the saved
// ones: an end given as a time must match exactly, and with both ends
// relative the range's width must (a rerun of the same command resumes;
// another --from or --to does not). The filters are checked by
// LoadReplayCheckpoint.
func checkSavedRange(checkpoint, from, to string, asked, saved store.ReplaySelection) error {
	var same bool
	switch {
	case isDuration(from) && isDuration(to):
		same = asked.To.Sub(asked.From) == saved.To.Sub(saved.From)
	case isDuration(to):
		same = asked.From.Equal(saved.From)
	case isDuration(from):
		same = asked.To.Equal(saved.To)
	default:
		return nil // both ends are times: LoadReplayCheckpoint compared them
	}
	if same {
		return nil
	}
	return usageError{fmt.Errorf("--from/--to: checkpoint %q covers events added from %s to %s (%v); --from %s --to %s "+
		"asks for a different range (%s to %s). A checkpoint only resumes its own range: use a new --checkpoint name "+
		"to replay another one", checkpoint, saved.From.Format(time.RFC3339), saved.To.Format(time.RFC3339),
		saved.To.Sub(saved.From).Round(time.Second), from, to, asked.From.Format(time.RFC3339), asked.To.Format(time.RFC3339))}
}

// ensureReplayTopic creates the replay topic like the live topic
// (kafka.EnsureReplayTopic) and says what it did on w.
func ensureReplayTopic(ctx context.Context, w io.Writer, adm *kadm.Client, live, replay string) error {
	change, err := kafka.EnsureReplayTopic(ctx, adm, live, replay)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "replay topic %s: %s\n", replay, change)
	return nil
}
