package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// Replay defaults.
const (
	ReplayRateDefault      = 200
	ReplayTopicSuffix      = ".replay"
	replayPageSize         = 200
	ReplayHeaderCheckpoint = "herald-replay"
)

// ReplayStore is what a replay needs from the database.
type ReplayStore interface {
	ReplayPage(ctx context.Context, sel store.ReplaySelection, pos store.ReplayPosition, limit int) ([]store.Event, error)
	LoadReplayCheckpoint(ctx context.Context, name string, sel store.ReplaySelection, savedRange bool) (store.ReplayCheckpoint, error)
	SaveReplayCheckpoint(ctx context.Context, cp store.ReplayCheckpoint, finished bool) error
}

// ReplayConfig shapes a replay.
type ReplayConfig struct {
	// Checkpoint names the replay; running it again resumes after the last
	// page it finished. Required.
	Checkpoint string
	// Selection chooses the events. Required.
	Selection store.ReplaySelection
	// ResumeSavedRange resumes an existing checkpoint with the time range it
	// was saved with (for ranges given relative to now). Defaults to false:
	// the range must match.
	ResumeSavedRange bool
	// Topics routes aggregate types to their live topics, as the relay's
	// Config.Topics. Defaults to TopicsDefault.
	Topics map[string]string
	// DefaultTopic is the live topic of aggregate types Topics does not
	// name, as the relay's Config.DefaultTopic. Defaults to "".
	DefaultTopic string
	// Records are the record formats, as the relay's Config.Records: a
	// replayed record is the live one, on the replay topic. Defaults to
	// herald's format.
	Records record.FormatConfig
	// TopicFor names the replay topic of a live topic. Defaults to adding
	// ".replay": a separate topic, so a replay never competes with live
	// traffic for consumers.
	TopicFor func(live string) string
	// Rate is the most records per second. Defaults to 200.
	Rate int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Progress is called after every page. Defaults to none.
	Progress func(replayed int64)
}

// ErrReplayNeedsAggregateType: a replay in the debezium format for every
// aggregate type names none (ReplayTopics).
var ErrReplayNeedsAggregateType = errors.New("in the debezium format each aggregate type's records go to a topic of its own " +
	"(route.topic.replacement): replay one aggregate type at a time")

// ReplayTopics returns the live topics a replay of cfg may publish to,
// sorted: each needs its replay topic (cfg.TopicFor) before the replay
// runs. They are the routes' of the aggregate types in the herald and
// cloudevents formats and the default topic, or, when the selection names
// an aggregate type, its topic alone; the debezium format's topic follows
// from the aggregate type (record.Encoder.Topic), so a replay with that
// format for every aggregate type must name one
// (ErrReplayNeedsAggregateType).
func ReplayTopics(cfg ReplayConfig) ([]string, error) {
	if cfg.Topics == nil {
		cfg.Topics = TopicsDefault
	}
	enc, err := record.NewEncoder(record.Config{Topics: cfg.Topics, DefaultTopic: cfg.DefaultTopic, Formats: cfg.Records})
	if err != nil {
		return nil, err
	}
	if typ := cfg.Selection.AggregateType; typ != "" {
		topic, err := enc.Topic(typ)
		if err != nil {
			return nil, fmt.Errorf("aggregate type %s: %w", typ, err)
		}
		return []string{topic}, nil
	}
	if cfg.Records.Default == record.Debezium {
		return nil, ErrReplayNeedsAggregateType
	}
	set := map[string]bool{}
	for typ, topic := range cfg.Topics {
		if enc.FormatOf(typ) != record.Debezium {
			set[topic] = true
		}
	}
	if cfg.DefaultTopic != "" {
		set[cfg.DefaultTopic] = true
	}
	for typ, f := range cfg.Records.ByAggregateType {
		if f != record.Debezium {
			continue
		}
		topic, err := enc.Topic(typ)
		if err != nil {
			return nil, fmt.Errorf("aggregate type %s: %w", typ, err)
		}
		set[topic] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// ErrCheckpointNotSaved: a replay stopped because its checkpoint could not
// be saved. Records produced since the last saved position are produced
// again by the next run (duplicates, which inboxes absorb).
var ErrCheckpointNotSaved = errors.New("replay checkpoint not saved")

// Replayer re-publishes retained, published events to replay topics at a
// bounded rate, keeping their ids (so consumers' inboxes deduplicate) and
// their per-aggregate order.
type Replayer struct {
	cfg      ReplayConfig
	store    ReplayStore
	producer Producer
	encoder  *record.Encoder
}

// NewReplayer checks cfg.
func NewReplayer(cfg ReplayConfig, st ReplayStore, producer Producer) (*Replayer, error) {
	if err := store.ValidateCheckpointName(cfg.Checkpoint); err != nil {
		return nil, fmt.Errorf("replay: checkpoint name: %w", err)
	}
	if err := cfg.Selection.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rate == 0 {
		cfg.Rate = ReplayRateDefault
	}
	if cfg.Rate < 1 || cfg.Rate > 100_000 {
		return nil, fmt.Errorf("replay: rate must be 1..100000 records/s, got %d", cfg.Rate)
	}
	if cfg.Topics == nil {
		cfg.Topics = TopicsDefault
	}
	if cfg.TopicFor == nil {
		cfg.TopicFor = func(live string) string { return live + ReplayTopicSuffix }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	encoder, err := record.NewEncoder(record.Config{Topics: cfg.Topics, DefaultTopic: cfg.DefaultTopic, Formats: cfg.Records})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &Replayer{cfg: cfg, store: st, producer: producer, encoder: encoder}, nil
}

// Run replays until the selection is exhausted (or ctx ends; the
// checkpoint then lets a new run resume) and returns how many records this
// run produced.
func (r *Replayer) Run(ctx context.Context) (int64, error) {
	cp, err := r.store.LoadReplayCheckpoint(ctx, r.cfg.Checkpoint, r.cfg.Selection, r.cfg.ResumeSavedRange)
	if err != nil {
		return 0, err
	}
	if cp.Finished {
		r.cfg.Logger.Info("replay already finished", "checkpoint", cp.Name, "replayed", cp.Replayed)
		return 0, nil
	}
	var produced int64
	// save stores cp; unsaved records were produced since the last save.
	save := func(finished bool, unsaved int) error {
		if err := r.store.SaveReplayCheckpoint(ctx, cp, finished); err != nil {
			return fmt.Errorf("%w: %q: %v; the replay stopped, and the %d record(s) produced since its last saved "+
				"position will be produced again by the next run (duplicates, which inboxes absorb)",
				ErrCheckpointNotSaved, cp.Name, err, unsaved)
		}
		return nil
	}
	// Saved before anything is produced: a checkpoint that cannot be
	// saved stops the replay before its first record, not after every page
	// has been sent again by every rerun.
	if err := save(false, 0); err != nil {
		return 0, err
	}
	limiter := rate.NewLimiter(rate.Limit(r.cfg.Rate), min(r.cfg.Rate, replayPageSize))
	for {
		page, err := r.store.ReplayPage(ctx, cp.Selection, cp.Position, replayPageSize)
		if err != nil {
			return produced, err
		}
		if len(page) == 0 {
			return produced, save(true, 0)
		}
		results := make(chan error, len(page))
		for _, e := range page {
			if err := limiter.Wait(ctx); err != nil {
				return produced, err
			}
			rec, err := r.encoder.Encode(e)
			if errors.Is(err, record.ErrNoRoute) {
				return produced, fmt.Errorf("replay: event %s: no topic for aggregate type %q", e.ID, e.AggregateType)
			}
			if err != nil {
				return produced, fmt.Errorf("replay: event %s: %w", e.ID, err)
			}
			rec.Topic = r.cfg.TopicFor(rec.Topic)
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: ReplayHeaderCheckpoint, Value: []byte(cp.Name)})
			r.producer.Produce(ctx, rec, func(_ *kgo.Record, err error) { results <- err })
		}
		// The checkpoint moves only past acknowledged records: a crash
		// replays the page again (duplicates, which inboxes absorb).
		for range page {
			if err := <-results; err != nil {
				return produced, fmt.Errorf("replay: produce: %w", err)
			}
		}
		last := page[len(page)-1]
		cp.Position = store.ReplayPosition{AggregateType: last.AggregateType, AggregateID: last.AggregateID, AggregateSeq: last.AggregateSeq}
		cp.Replayed += int64(len(page))
		produced += int64(len(page))
		if err := save(false, len(page)); err != nil {
			return produced, err
		}
		if r.cfg.Progress != nil {
			r.cfg.Progress(cp.Replayed)
		}
	}
}
