package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/time/rate"

	"github.com/herald-outbox/herald/backoff"
	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/kafka"
)

// Consumer consumes Kafka topics as a named consumer and applies each event
// exactly once to its database: the event id goes into consumed_events in
// the same transaction as the handler's effects, and the Kafka offset is
// committed only after that transaction committed.
type Consumer struct {
	cfg     Config
	log     *slog.Logger
	group   *kafka.Consumer
	dlq     *kafka.DLQWriter
	limiter *rate.Limiter
	stats   counters
}

// New returns a Consumer with cfg; Run starts it.
func New(cfg Config) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Consumer{cfg: cfg, log: cfg.Logger.With("consumer", cfg.ConsumerName)}
	if cfg.RateLimit > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit), cfg.BatchSize)
	}
	dlq, err := kafka.NewDLQWriter(kafka.DLQWriterConfig{
		Brokers: cfg.Brokers, Partitions: cfg.DLQPartitions,
		ReplicationFactor: cfg.DLQReplicationFactor, ClientOptions: cfg.KafkaOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", cfg.ConsumerName, err)
	}
	group, err := kafka.NewConsumer(kafka.ConsumerConfig{
		Brokers: cfg.Brokers, Group: cfg.Group, Topics: cfg.Topics,
		Process:        c.process,
		MaxPollRecords: cfg.MaxPollRecords,
		StartAt:        cfg.StartAt,
		SessionTimeout: cfg.SessionTimeout,
		Logger:         c.log,
		ClientOptions:  cfg.KafkaOptions,
	})
	if err != nil {
		dlq.Close()
		return nil, fmt.Errorf("inbox %s: %w", cfg.ConsumerName, err)
	}
	c.dlq, c.group = dlq, group
	return c, nil
}

// Run creates the dead-letter topics if missing, then consumes until ctx is
// cancelled. On cancel it finishes the transaction at hand, commits the
// offsets of what it finished, leaves the group and returns nil; a cancel
// that comes while the dead-letter topics are being created returns nil too
// (nothing was consumed yet).
func (c *Consumer) Run(ctx context.Context) error {
	defer c.dlq.Close()
	for _, t := range c.cfg.Topics {
		ensureCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.dlq.EnsureTopic(ensureCtx, c.cfg.DLQTopic(t))
		cancel()
		if ctx.Err() != nil {
			c.log.Info("inbox consumer stopped before it started", "group", c.cfg.Group)
			return nil
		}
		if err != nil {
			return fmt.Errorf("inbox %s: dead-letter topic of %s: %w", c.cfg.ConsumerName, t, err)
		}
	}
	c.log.Info("inbox consumer started", "group", c.cfg.Group, "topics", c.cfg.Topics, "batch_size", c.cfg.BatchSize)
	err := c.group.Run(ctx)
	c.log.Info("inbox consumer stopped", "group", c.cfg.Group)
	return err
}

// Stats returns a snapshot of the consumer's counters.
func (c *Consumer) Stats() Stats {
	s := c.stats.snapshot()
	s.Assigned = c.group.Assigned()
	return s
}

// process is the kafka.ProcessFunc: it finishes the first BatchSize records
// of recs (or fewer, when ctx is done) and returns how many it finished.
func (c *Consumer) process(ctx context.Context, recs []*kgo.Record) int {
	chunk := recs[:min(len(recs), c.cfg.BatchSize)]
	if c.limiter != nil {
		if err := c.limiter.WaitN(ctx, len(chunk)); err != nil {
			return 0
		}
	}
	if len(chunk) > 1 {
		if n, ok := c.processBatch(ctx, chunk); ok {
			return n
		}
	}
	// One record per transaction (also the fallback of a failed batch).
	for i, rec := range chunk {
		if !c.processOne(ctx, rec) {
			return i
		}
	}
	return len(chunk)
}

// processBatch applies chunk in one transaction. It returns ok=false when
// the chunk must be processed record by record instead: a record could not
// be decoded, or the handler failed on one.
func (c *Consumer) processBatch(ctx context.Context, chunk []*kgo.Record) (int, bool) {
	msgs := make([]Message, len(chunk))
	for i, rec := range chunk {
		m, err := c.decode(rec)
		if err != nil {
			return 0, false
		}
		msgs[i] = m
	}
	for retry := 1; ; retry++ {
		res, err := c.apply(ctx, msgs)
		if err == nil {
			c.committed(ctx, msgs, res)
			return len(chunk), true
		}
		if res.failedInHandler && !IsTransient(c.cfg.Dialect, err) {
			return 0, false
		}
		class := c.retryClass(res, err)
		c.noteRetry(chunk[0], class, retry, err, "")
		if !c.wait(ctx, retry) {
			return 0, true // stopped; nothing finished
		}
	}
}

// processOne finishes one record: applied, dropped as a duplicate, or
// dead-lettered. It returns false only if ctx ended first.
func (c *Consumer) processOne(ctx context.Context, rec *kgo.Record) bool {
	msg, err := c.decode(rec)
	if err != nil {
		return c.deadLetter(ctx, rec, envelope.ErrorClass(err), err, 0, "")
	}
	handlerFailures := 0
	for retry := 1; ; retry++ {
		msg.Attempt = handlerFailures + 1
		res, err := c.apply(ctx, []Message{msg})
		if err == nil {
			c.committed(ctx, []Message{msg}, res)
			return true
		}
		class := c.retryClass(res, err)
		if class == RetryHandler {
			handlerFailures++
			if IsPermanent(err) || handlerFailures >= c.cfg.MaxAttempts {
				return c.deadLetter(ctx, rec, ClassHandler, err, handlerFailures, msg.EventID)
			}
		}
		c.noteRetry(rec, class, retry, err, msg.EventID)
		if !c.wait(ctx, retry) {
			return false
		}
	}
}

// decode reads rec as Config.Format says. Its errors match the sentinels
// of package envelope, so envelope.ErrorClass names their dead-letter class
// whatever the format: a record without an event id is missing_id in each.
func (c *Consumer) decode(rec *kgo.Record) (Message, error) {
	var ev envelope.Event
	var err error
	switch c.cfg.Format {
	case FormatDebezium:
		ev.Envelope, err = decodeDebezium(rec, c.cfg.TypeHeader)
	case FormatCloudEvents:
		ev.Envelope, err = decodeCloudEvents(rec)
	default:
		ev, err = c.cfg.Registry.Decode(rec.Value)
	}
	if err != nil {
		return Message{}, err
	}
	m := Message{Event: ev, Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key}
	if len(rec.Headers) > 0 {
		m.Headers = make(map[string]string, len(rec.Headers))
		for _, h := range rec.Headers {
			m.Headers[h.Key] = string(h.Value)
		}
	}
	return m, nil
}

// applyResult says what one transaction did.
type applyResult struct {
	duplicate       []bool          // per message: the inbox already had it
	latency         []time.Duration // per message: the handler's run time
	failedInHandler bool            // the error came from the handler
}

// apply runs one transaction over msgs: per message, record the event id in
// consumed_events (a duplicate key means: already applied, skip it) and run
// the handler; then commit. The transaction is not bound to ctx: a stopping
// consumer finishes the one at hand (within TxTimeout) rather than wasting
// it.
func (c *Consumer) apply(ctx context.Context, msgs []Message) (applyResult, error) {
	res := applyResult{duplicate: make([]bool, len(msgs)), latency: make([]time.Duration, len(msgs))}
	txCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.TxTimeout)
	defer cancel()
	tx, err := c.cfg.DB.BeginTx(txCtx, &sql.TxOptions{Isolation: c.cfg.TxIsolation})
	if err != nil {
		return res, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	applied := 0
	for i, m := range msgs {
		duplicate, err := c.cfg.Dialect.InsertConsumed(txCtx, tx, c.cfg.ConsumerName, m.EventID)
		if duplicate {
			res.duplicate[i] = true
			continue
		}
		if err != nil {
			return res, fmt.Errorf("record event %s in consumed_events: %w", m.EventID, err)
		}
		start := time.Now()
		if err := c.cfg.Handler.Handle(txCtx, tx, m); err != nil {
			res.failedInHandler = true
			return res, fmt.Errorf("handle event %s%s: %w", m.EventID, describeType(m.Event), err)
		}
		res.latency[i] = time.Since(start)
		applied++
	}
	if applied == 0 {
		return res, nil // only duplicates: nothing to commit
	}
	if err := tx.Commit(); err != nil {
		// The commit may have happened anyway; a retry then finds the
		// event ids in consumed_events and drops them as duplicates.
		return res, fmt.Errorf("commit: %w", err)
	}
	return res, nil
}

// describeType says what an event is, for errors: " (type vN)" for a
// herald envelope, " (type)" for a format without versions, "" when the
// record named no type.
func describeType(e envelope.Event) string {
	switch {
	case e.Type != "" && e.Version > 0:
		return fmt.Sprintf(" (%s v%d)", e.Type, e.Version)
	case e.Type != "":
		return " (" + e.Type + ")"
	}
	return ""
}

// committed accounts for a successful transaction and runs the hooks that
// follow a database commit.
func (c *Consumer) committed(ctx context.Context, msgs []Message, res applyResult) {
	var applied []Message
	for i, m := range msgs {
		if res.duplicate[i] {
			c.stats.duplicates.Add(1)
			c.cfg.Observer.Duplicate(m.Topic, m.Partition)
			c.log.Debug("duplicate event dropped", "event_id", m.EventID, "topic", m.Topic, "partition", m.Partition, "offset", m.Offset)
			continue
		}
		c.stats.addProcessed(res.latency[i])
		c.cfg.Observer.Processed(m.Topic, m.Partition, res.latency[i])
		applied = append(applied, m)
	}
	if len(applied) == 0 {
		return
	}
	failpoint.Hit(failpoint.ConsumerAfterCommitBeforeOffset)
	if c.cfg.AfterCommit != nil {
		c.cfg.AfterCommit(ctx, applied)
	}
}

func (c *Consumer) retryClass(res applyResult, err error) string {
	switch {
	case IsTransient(c.cfg.Dialect, err):
		return RetryTransient
	case res.failedInHandler:
		return RetryHandler
	}
	return RetryDatabase
}

func (c *Consumer) noteRetry(rec *kgo.Record, class string, retry int, err error, eventID string) {
	c.stats.addRetry(class)
	c.cfg.Observer.Retried(rec.Topic, rec.Partition, class)
	c.log.Warn("inbox transaction failed; retrying",
		"event_id", eventID, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset,
		"attempt", retry, "error_class", class, "error", kafka.ScrubError(err.Error()))
}

// wait sleeps before retry number retry; false means ctx ended first.
func (c *Consumer) wait(ctx context.Context, retry int) bool {
	d := backoff.Delay(retry-1, c.cfg.RetryBackoff, c.cfg.RetryBackoffMax, rand.Float64())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deadLetter produces rec to its dead-letter topic and waits for the
// acknowledgement, retrying until it gets one: a record is never skipped
// without a trace. False means ctx ended first (the record is not finished
// and its offset is not committed).
func (c *Consumer) deadLetter(ctx context.Context, rec *kgo.Record, class string, cause error, attempts int, eventID string) bool {
	topic := c.cfg.DLQTopic(rec.Topic)
	if eventID == "" {
		var de *envelope.DecodeError
		var fe *decodeError
		switch {
		case errors.As(cause, &de):
			eventID = de.EventID
		case errors.As(cause, &fe):
			eventID = fe.eventID
		}
	}
	dl := kafka.DeadLetter{Record: rec, Class: class, Err: cause, Consumer: c.cfg.ConsumerName, Attempts: attempts, FailedAt: time.Now()}
	for retry := 1; ; retry++ {
		err := c.dlq.Write(ctx, topic, dl)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		c.log.Warn("dead-letter produce failed; retrying",
			"event_id", eventID, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset,
			"dlq_topic", topic, "attempt", retry, "error", err)
		if !c.wait(ctx, retry) {
			return false
		}
	}
	c.stats.addDeadLettered(class)
	c.cfg.Observer.DeadLettered(rec.Topic, rec.Partition, class)
	c.log.Warn("record dead-lettered",
		"event_id", eventID, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset,
		"dlq_topic", topic, "error_class", class, "attempts", attempts, "error", kafka.ScrubError(cause.Error()))
	return true
}
