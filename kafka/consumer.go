package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
)

// Defaults of ConsumerConfig.
const (
	// MaxPollRecordsDefault is ConsumerConfig.MaxPollRecords's default.
	MaxPollRecordsDefault = 500
	// CommitIntervalDefault is ConsumerConfig.CommitInterval's default.
	CommitIntervalDefault = time.Second
	// SessionTimeoutDefault is ConsumerConfig.SessionTimeout's default
	// (franz-go's).
	SessionTimeoutDefault = 45 * time.Second
	// commitTimeout bounds one offset commit.
	commitTimeout = 15 * time.Second
)

// ProcessFunc handles records of one partition, in offset order. It returns
// how many of recs, from the first, it finished: their effects are durable
// and their offsets may be committed. It may return fewer than len(recs) (it
// is called again with the rest), and returns 0 only once ctx is done, which
// happens when the partition is revoked or the consumer stops: it should then
// finish or abandon the record at hand quickly, never leaving a record
// half-done behind a count that includes it.
type ProcessFunc func(ctx context.Context, recs []*kgo.Record) int

// ConsumerConfig shapes a Consumer. Brokers, Group, Topics and Process are
// required; zero values elsewhere mean defaults. NewConsumer reports every
// invalid field at once, each as a *ConfigError.
type ConsumerConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// Group is the consumer group. Required.
	Group string
	// Topics are consumed by the group. Required.
	Topics []string
	// Process handles each partition's records; one goroutine per assigned
	// partition calls it. Required.
	Process ProcessFunc
	// MaxPollRecords bounds the records one poll hands out, across
	// partitions. Defaults to 500.
	MaxPollRecords int
	// MaxBufferedRecords is how many records a partition may have waiting
	// for its worker before fetching that partition pauses. Defaults to
	// 2 × MaxPollRecords.
	MaxBufferedRecords int
	// CommitInterval is the longest a worker goes without committing the
	// offsets it finished while it is busy; a worker that catches up
	// commits at once. Defaults to 1 s.
	CommitInterval time.Duration
	// StartAt applies to partitions the group has no committed offset for
	// (a new group): consumption starts at the first record stamped at or
	// after StartAt. Defaults to the zero time: the start of the log.
	StartAt time.Time
	// SessionTimeout is how long the group waits for a silent member (a
	// crashed process) before giving its partitions to others. Defaults to
	// 45 s; the brokers' group.min.session.timeout.ms (6 s) is the floor.
	SessionTimeout time.Duration
	// Logger receives rebalances and commit failures. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// ClientOptions are added to the franz-go client's options (TLS, SASL,
	// client id). Options that change committing or the rebalance callbacks
	// break the Consumer's guarantees. Defaults to none.
	ClientOptions []kgo.Opt
}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = MaxPollRecordsDefault
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = 2 * c.MaxPollRecords
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = CommitIntervalDefault
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = SessionTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c ConsumerConfig) validate() error {
	var errs config.Errors
	if len(c.Brokers) == 0 {
		errs.Add("Brokers", "at least one broker is required")
	}
	if c.Group == "" {
		errs.Add("Group", "is required")
	}
	if len(c.Topics) == 0 {
		errs.Add("Topics", "at least one topic is required")
	}
	if c.Process == nil {
		errs.Add("Process", "is required")
	}
	if c.MaxPollRecords < 0 {
		errs.Add("MaxPollRecords", "must not be negative, got %d", c.MaxPollRecords)
	}
	if c.MaxBufferedRecords < 0 {
		errs.Add("MaxBufferedRecords", "must not be negative, got %d", c.MaxBufferedRecords)
	}
	if c.CommitInterval < 0 {
		errs.Add("CommitInterval", "must not be negative, got %s", c.CommitInterval)
	}
	if c.SessionTimeout < 0 {
		errs.Add("SessionTimeout", "must not be negative, got %s", c.SessionTimeout)
	}
	return errs.Err()
}

type topicPartition struct {
	topic     string
	partition int32
}

// Consumer is a consumer-group member that runs one goroutine per assigned
// partition: records of a partition are processed in order, partitions in
// parallel. Offsets are committed only for records Process finished, never
// automatically; a revoked partition's worker is stopped and its finished
// offsets committed before the partition is handed over.
type Consumer struct {
	cfg ConsumerConfig
	cl  *kgo.Client
	log *slog.Logger

	mu      sync.Mutex
	workers map[topicPartition]*partitionWorker
}

// NewConsumer returns a Consumer; Run starts it.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("kafka consumer config: %w", err)
	}
	cfg = cfg.withDefaults()
	c := &Consumer{cfg: cfg, log: cfg.Logger, workers: map[topicPartition]*partitionWorker{}}

	start := kgo.NewOffset().AtStart()
	if !cfg.StartAt.IsZero() {
		start = kgo.NewOffset().AfterMilli(cfg.StartAt.UnixMilli())
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.DisableAutoCommit(),
		// Rebalance callbacks never run between a poll and the hand-off of
		// its records to the workers, so a revoked partition's records
		// never reach a worker created after the revocation.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
		kgo.ConsumeStartOffset(start),
		// A committed offset that fell out of the log resumes at the
		// oldest record still there: never skip what can still be read.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(cfg.SessionTimeout),
		// Resumed partitions wait for in-flight fetches; keep those short.
		kgo.FetchMaxWait(time.Second),
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	c.cl = cl
	return c, nil
}

// Client returns the underlying franz-go client, for admin requests.
func (c *Consumer) Client() *kgo.Client { return c.cl }

// Assigned returns the partitions this member currently works on.
func (c *Consumer) Assigned() map[string][]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]int32{}
	for tp := range c.workers {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	return out
}

// Run polls and hands records to the partition workers until ctx is
// cancelled; then it lets the workers finish the record at hand, commits
// what they finished, leaves the group and returns nil. It can be called
// once.
func (c *Consumer) Run(ctx context.Context) error {
	defer func() {
		// Close leaves the group, which runs revoked: the workers stop and
		// their final offsets are committed before the leave.
		c.cl.Close()
	}()
	for {
		fetches := c.cl.PollRecords(ctx, c.cfg.MaxPollRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			c.cl.AllowRebalance()
			return nil
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			c.log.Warn("kafka fetch failed", "topic", topic, "partition", partition, "error", err)
		})
		c.mu.Lock()
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			w := c.workers[topicPartition{p.Topic, p.Partition}]
			if w == nil {
				// Not ours (any more): nothing was committed for these
				// records, so whoever owns the partition reads them.
				return
			}
			w.enqueue(p.Records)
		})
		c.mu.Unlock()
		c.cl.AllowRebalance()
	}
}

func (c *Consumer) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, partitions := range assigned {
		for _, p := range partitions {
			tp := topicPartition{topic, p}
			if c.workers[tp] != nil {
				continue
			}
			w := newPartitionWorker(c, tp)
			c.workers[tp] = w
			go w.run()
		}
	}
	c.log.Info("kafka partitions assigned", "group", c.cfg.Group, "partitions", assigned)
}

func (c *Consumer) revoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	c.stopWorkers(revoked, true)
	if len(revoked) > 0 {
		c.log.Info("kafka partitions revoked", "group", c.cfg.Group, "partitions", revoked)
	}
}

func (c *Consumer) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	// The group already gave these partitions away: a commit now could
	// rewind the new owner's, so nothing is committed.
	c.stopWorkers(lost, false)
	if len(lost) > 0 {
		c.log.Warn("kafka partitions lost", "group", c.cfg.Group, "partitions", lost)
	}
}

// stopWorkers stops the workers of partitions, waits for them to finish the
// record at hand and, when commit is set, commits what they finished.
func (c *Consumer) stopWorkers(partitions map[string][]int32, commit bool) {
	var stopped []*partitionWorker
	c.mu.Lock()
	for topic, ps := range partitions {
		for _, p := range ps {
			tp := topicPartition{topic, p}
			if w := c.workers[tp]; w != nil {
				delete(c.workers, tp)
				w.stop()
				stopped = append(stopped, w)
			}
		}
	}
	c.mu.Unlock()
	if len(stopped) == 0 {
		return
	}
	var finished []*kgo.Record
	resume := map[string][]int32{}
	for _, w := range stopped {
		<-w.done
		if r := w.uncommitted(); r != nil {
			finished = append(finished, r)
		}
		resume[w.tp.topic] = append(resume[w.tp.topic], w.tp.partition)
	}
	// A partition that comes back later must not come back paused.
	c.cl.ResumeFetchPartitions(resume)
	if commit && len(finished) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		defer cancel()
		if err := c.cl.CommitRecords(ctx, finished...); err != nil {
			c.log.Warn("kafka final offset commit failed; the next owner re-reads finished records (the inbox drops them)",
				"group", c.cfg.Group, "error", err)
		}
	}
}

// partitionWorker processes one partition's records in order.
type partitionWorker struct {
	c  *Consumer
	tp topicPartition

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu       sync.Mutex
	queue    []*kgo.Record
	inFlight int
	paused   bool

	// Owned by the worker goroutine until done is closed.
	finished   *kgo.Record // last record Process finished
	committed  *kgo.Record // last record whose offset was committed
	lastCommit time.Time
}

func newPartitionWorker(c *Consumer, tp topicPartition) *partitionWorker {
	ctx, cancel := context.WithCancel(context.Background())
	return &partitionWorker{
		c: c, tp: tp, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1),
	}
}

func (w *partitionWorker) stop() { w.cancel() }

// enqueue adds polled records; it pauses fetching the partition when the
// worker is too far behind, so one slow partition never holds up the others
// and memory stays bounded.
func (w *partitionWorker) enqueue(recs []*kgo.Record) {
	w.mu.Lock()
	w.queue = append(w.queue, recs...)
	if !w.paused && len(w.queue)+w.inFlight >= w.c.cfg.MaxBufferedRecords {
		w.paused = true
		w.c.cl.PauseFetchPartitions(map[string][]int32{w.tp.topic: {w.tp.partition}})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take waits for records; nil means the worker was stopped.
func (w *partitionWorker) take() []*kgo.Record {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			recs := w.queue
			w.queue = nil
			w.inFlight = len(recs)
			w.mu.Unlock()
			return recs
		}
		w.mu.Unlock()
		select {
		case <-w.ctx.Done():
			return nil
		case <-w.wake:
		}
	}
}

// settle records that the taken records are done, resumes fetching when the
// backlog is small again, and reports whether nothing is waiting.
func (w *partitionWorker) settle() (idle bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight = 0
	if w.paused && len(w.queue) < w.c.cfg.MaxBufferedRecords/2 {
		w.paused = false
		w.c.cl.ResumeFetchPartitions(map[string][]int32{w.tp.topic: {w.tp.partition}})
	}
	return len(w.queue) == 0
}

func (w *partitionWorker) run() {
	defer close(w.done)
	w.lastCommit = time.Now()
	for {
		recs := w.take()
		if recs == nil {
			return
		}
		for len(recs) > 0 {
			n := w.c.cfg.Process(w.ctx, recs)
			if n > 0 {
				w.finished = recs[n-1]
				recs = recs[n:]
			}
			if w.ctx.Err() != nil {
				return // the stopper commits what was finished
			}
			if time.Since(w.lastCommit) >= w.c.cfg.CommitInterval {
				w.commit()
			}
		}
		if w.settle() {
			w.commit()
		}
	}
}

// uncommitted returns the last finished record if its offset was not
// committed yet.
func (w *partitionWorker) uncommitted() *kgo.Record {
	if w.finished == nil || w.finished == w.committed {
		return nil
	}
	return w.finished
}

func (w *partitionWorker) commit() {
	r := w.uncommitted()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, commitTimeout)
	defer cancel()
	w.lastCommit = time.Now()
	if err := w.c.cl.CommitRecords(ctx, r); err != nil {
		if w.ctx.Err() == nil {
			w.c.log.Warn("kafka offset commit failed; retried with the next one",
				"group", w.c.cfg.Group, "topic", w.tp.topic, "partition", w.tp.partition, "offset", r.Offset, "error", err)
		}
		return
	}
	w.committed = r
}
