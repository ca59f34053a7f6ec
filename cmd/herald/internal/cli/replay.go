package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

func newReplayCommand() *cobra.Command {
	var (
		db         dbFlags
		kf         kafkaFlags
		sel        store.ReplaySelection
		from, to   string
		routing    routeFlags
		suffix     string
		checkpoint string
		rateLimit  int
		maxRecord  int
		mapping    mappingFlags
		records    recordFlags
	)
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
			ctx := cmd.Context()
			now := time.Now()
			var err error
			if sel.From, err = parseInstant("--from", from, now); err != nil {
				return err
			}
			if sel.To, err = parseInstant("--to", to, now); err != nil {
				return err
			}
			if err := sel.Validate(); err != nil {
				return usageError{err}
			}
			if err := store.ValidateCheckpointName(checkpoint); err != nil {
				return usageError{fmt.Errorf("--checkpoint: %w", err)}
			}
			if rateLimit < 1 {
				return usageError{fmt.Errorf("--rate: must be at least 1 record/s, got %d", rateLimit)}
			}
			if suffix == "" {
				return usageError{fmt.Errorf("--suffix: must not be empty: a replay never goes to the live topic")}
			}
			if err := kafka.ValidateMaxRecordBytes(maxRecord); err != nil {
				return usageError{fmt.Errorf("--max-record-bytes: %w", err)}
			}
			routes, defTopic, err := routing.parse()
			if err != nil {
				return err
			}
			formats, err := records.formatConfig(&mapping)
			if err != nil {
				return err
			}
			lives, err := relay.ReplayTopics(relay.ReplayConfig{Selection: sel, Topics: routes, DefaultTopic: defTopic, Records: formats})
			switch {
			case errors.Is(err, relay.ErrReplayNeedsAggregateType):
				return usageError{fmt.Errorf("--record-format debezium: %w (--aggregate-type)", err)}
			case err != nil:
				return usageError{fmt.Errorf("--aggregate-type: %w", err)}
			}
			for _, live := range lives {
				if err := kafka.ValidateTopicName(live + suffix); err != nil {
					return usageError{fmt.Errorf("--suffix: the replay topic of %s: %w", live, err)}
				}
			}
			// Settings that can never work stop the command before it
			// touches the database or Kafka.
			kafkaOpts, err := kf.options()
			if err != nil {
				return err
			}
			conn, err := db.openMigrated(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			resumeSaved := isDuration(from) || isDuration(to)
			saved, err := store.New(conn, db.dialect()).LoadReplayCheckpoint(ctx, checkpoint, sel, resumeSaved)
			if errors.Is(err, store.ErrCheckpointMismatch) {
				return usageError{fmt.Errorf("--checkpoint %s: %w; use a new --checkpoint name for a new replay", checkpoint, err)}
			}
			if err != nil {
				return err
			}
			if err := checkSavedRange(checkpoint, from, to, sel, saved.Selection); err != nil {
				return err
			}
			if saved.Finished {
				fmt.Fprintf(cmd.OutOrStdout(), "replay %q already finished: %d event(s) added from %s to %s; "+
					"0 event(s) this run (use a new --checkpoint name for a new replay)\n", checkpoint, saved.Replayed,
					saved.Selection.From.Format(time.RFC3339), saved.Selection.To.Format(time.RFC3339))
				return nil
			}
			adm, err := kf.admin(ctx)
			if err != nil {
				return err
			}
			defer adm.Close()
			for _, live := range lives {
				if err := ensureReplayTopic(cmd, adm, live, live+suffix); err != nil {
					return err
				}
			}
			producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: kf.brokers, ClientID: "herald-replay",
				MaxRecordBytes: maxRecord, ClientOptions: kafkaOpts, RecordTimestamps: formats.Timestamped()})
			if err != nil {
				return err
			}
			defer producer.Close()
			start := time.Now()
			rp, err := relay.NewReplayer(relay.ReplayConfig{
				Checkpoint: checkpoint, Selection: sel, Topics: routes, DefaultTopic: defTopic, Records: formats, Rate: rateLimit,
				ResumeSavedRange: resumeSaved,
				TopicFor:         func(live string) string { return live + suffix },
				Progress: func(n int64) {
					fmt.Fprintf(cmd.ErrOrStderr(), "\rreplayed %d event(s) (%.0f/s)   ", n,
						float64(n)/max(time.Since(start).Seconds(), 0.001))
				},
			}, store.New(conn, db.dialect()), producer)
			if err != nil {
				return usageError{err}
			}
			n, err := rp.Run(ctx)
			fmt.Fprintln(cmd.ErrOrStderr())
			switch {
			case errors.Is(err, relay.ErrCheckpointNotSaved):
				return err
			case err != nil:
				return fmt.Errorf("%w (progress is saved after every page; rerun the same command to resume)", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "replay %q finished: %d event(s) this run in %v\n", checkpoint, n,
				time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	kf.register(cmd, env)
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "replay events added at or after (RFC 3339, or a duration ago like 6h)")
	f.StringVar(&to, "to", "0s", "replay events added before (RFC 3339, or a duration ago; default now)")
	f.StringVar(&sel.AggregateType, "aggregate-type", "", "only this aggregate type")
	f.StringVar(&sel.AggregateID, "aggregate-id", "", "only this aggregate (needs --aggregate-type)")
	f.StringVar(&sel.EventType, "event-type", "", "only this event type")
	routing.register(cmd, env)
	mapping.register(cmd, env)
	records.register(cmd, env)
	f.StringVar(&suffix, "suffix", relay.ReplayTopicSuffix, "replay topic = live topic + suffix")
	f.StringVar(&checkpoint, "checkpoint", "", "name under which progress is saved (required)")
	f.IntVar(&rateLimit, "rate", relay.ReplayRateDefault, "most records per second")
	maxRecordBytesFlag(cmd, env, &maxRecord)
	env.bind(cmd)
	return cmd
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
// (kafka.EnsureReplayTopic) and says what it did.
func ensureReplayTopic(cmd *cobra.Command, adm *kadm.Client, live, replay string) error {
	change, err := kafka.EnsureReplayTopic(cmd.Context(), adm, live, replay)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "replay topic %s: %s\n", replay, change)
	return nil
}
