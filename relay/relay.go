package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/backoff"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/internal/redact"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// settleTimeout bounds recording a batch's outcome, even during shutdown.
const settleTimeout = 30 * time.Second

// Store is what the relay needs from the database; *store.Store
// implements it.
type Store interface {
	// Rebalance takes the relay's turn at the bucket table.
	Rebalance(ctx context.Context, req store.RebalanceRequest) (store.Rebalance, error)
	// Leave frees the relay's buckets when it stops.
	Leave(ctx context.Context, relayID string) error
	// Claim takes a batch of ready events of the owned buckets whose
	// aggregate predecessors are done.
	Claim(ctx context.Context, req store.ClaimRequest) (store.Claim, error)
	// Settle records a batch's outcome, fenced by the buckets' epochs.
	Settle(ctx context.Context, c store.Claim, out store.Outcome, policy store.OrderPolicy) (store.Settled, error)
	// PlanStream plans a batch the change stream read.
	PlanStream(ctx context.Context, own store.Ownership, events []store.Event, policy store.OrderPolicy, known *store.Known) (store.Claim, error)
	// SaveCheckpoint moves the change stream's position.
	SaveCheckpoint(ctx context.Context, relayID string, cp store.Checkpoint) error
	// Stream reads the change stream's row.
	Stream(ctx context.Context) (store.StreamLease, time.Time, error)
	// SampleWatermark and WatermarkEnded take the change stream's
	// watermark samples (docs/design.md, section 9.3).
	SampleWatermark(ctx context.Context) (store.WatermarkSample, error)
	WatermarkEnded(ctx context.Context, s store.WatermarkSample) (bool, error)
}

// Relay claims committed outbox events of the buckets it owns, publishes
// them to Kafka and marks them published, at least once and in order per
// aggregate (docs/design.md, sections 4 to 6).
type Relay struct {
	cfg       Config
	store     Store
	publisher *Publisher
	log       *slog.Logger
	// errorStreak counts consecutive failed iterations, for the loop's own
	// backoff while the database or Kafka is down.
	errorStreak uint32

	// own is what the last turn at the bucket table left the relay with,
	// deadline when its lease ends on the local clock, and lastTurn when
	// the turn was taken; turnTried is when the last turn was tried,
	// whether it succeeded.
	own       store.Ownership
	deadline  time.Time
	lastTurn  time.Time
	turnTried time.Time
	// known remembers the latest published event of aggregates, so their
	// next events need no predecessor read.
	known *store.Known
	// settling is the batch being settled in the background, if any, and
	// cursor where the next claim continues (past it); nil starts over.
	settling *settling
	cursor   *store.ReadyCursor
	// config is the Kafka configuration failure publishing is stopped by.
	config configState

	// leading says the last turn left the relay the stream's leader, and
	// stream is the stream's row as it read it; streamer reads the change
	// stream while the relay leads (docs/design.md, section 9).
	leading  bool
	stream   store.StreamLease
	streamer *streamer
}

// settling is a clean batch of the polling path (every event
// acknowledged) whose marks are written while the next batch is claimed
// and produced. A change stream's clean batch writes nothing.
type settling struct {
	done chan struct{}
	err  error
}

// Producer is the part of a franz-go client the relay uses; *kgo.Client
// from kafka.NewProducer implements it.
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// New returns a Relay over st publishing with producer (see
// kafka.NewProducer; its delivery timeout should be shorter than the lease).
func New(cfg Config, st Store, producer Producer) (*Relay, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("relay config: %w", err)
	}
	encoder, err := cfg.encoder()
	if err != nil {
		return nil, fmt.Errorf("relay config: %w", err)
	}
	return &Relay{
		cfg: cfg, store: st, publisher: NewPublisher(producer, encoder),
		log: cfg.Logger.With("relay_id", cfg.ID), known: store.NewKnown(),
	}, nil
}

// Run claims, publishes and marks until ctx is cancelled. Cancelling stops
// claiming; the batch in flight is finished (or, after ShutdownTimeout, its
// unsent events are given back), the relay's buckets are freed for the
// others, and Run returns nil.
func (r *Relay) Run(ctx context.Context) error {
	r.log.Info("relay started", "batch_size", r.cfg.BatchSize, "lease", r.cfg.Lease.String(),
		"order_policy", r.cfg.OrderPolicy)
	if o, ok := r.cfg.Observer.(SourceObserver); ok {
		source := SourcePoll
		if r.cfg.Stream != nil {
			source = SourceStream
		}
		o.Started(source)
	}
	for {
		if ctx.Err() != nil {
			if err := r.awaitSettle(); err != nil {
				r.log.Error("settling the last batch failed; its events will be published again", "error", err)
			}
			r.finishStream(ctx)
			r.leave(ctx)
			r.log.Info("relay stopped")
			return nil
		}
		claimed, err := r.runOnce(ctx)
		// While it waits the relay takes its turns; a failed turn is a
		// failed iteration.
		for wait := r.afterIteration(ctx, claimed, err); wait > 0; {
			err := r.pause(ctx, wait)
			if err == nil {
				break
			}
			wait = r.afterIteration(ctx, 0, err)
		}
	}
}

// afterIteration keeps the loop's error streak and logs a failed
// iteration, and returns how long to wait before the next one.
func (r *Relay) afterIteration(ctx context.Context, claimed int, err error) time.Duration {
	switch {
	case err != nil && ctx.Err() != nil:
		return 0
	case err != nil:
		r.errorStreak++
		wait := backoff.Delay(int(r.errorStreak), r.cfg.PollInterval, 10*time.Second, rand.Float64())
		if !isConfigurationFailure(err) { // configFailed logs those, once per interval
			r.log.Error("relay iteration failed", "error", err, "retry_in", wait.String())
		}
		return wait
	case claimed == 0:
		// Nothing was ready: look again after the poll interval. A claim
		// that found anything is followed by the next at once.
		r.errorStreak = 0
		return r.cfg.PollInterval
	}
	r.errorStreak = 0
	return 0
}

// pause waits d, taking the relay's turns at the bucket table when they
// fall due meanwhile: a relay backing off after failed iterations (Kafka
// refusing its credentials, the database away) is alive, so it keeps its
// buckets and its stream lease however long it waits. Only a relay that
// died, or hangs inside an iteration (bounded by the lease: publishing
// ends at the buckets' earliest expiry), lets its leases expire. A turn
// that fails ends the wait with its error.
func (r *Relay) pause(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 || ctx.Err() != nil {
			return nil
		}
		// The next turn is a turn interval after the last one tried,
		// whether it succeeded: a relay whose database is away retries, it
		// does not spin. (A successful turn is the last one tried, so this
		// is also when turnDue says the next one is due.)
		step := left
		if !r.turnTried.IsZero() {
			step = min(step, time.Until(r.turnTried.Add(r.turnEvery())))
		}
		if step > 0 {
			t := time.NewTimer(step)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if time.Since(r.turnTried) >= r.turnEvery() {
			if err := r.turn(ctx); err != nil {
				return err
			}
		}
	}
}

// turnInterval is how often a relay takes its turn at the bucket table
// (at most; a short lease makes it more often): a relay that joins gets its
// share within about two turns.
const turnInterval = time.Second

// turn takes the relay's turn at the bucket table when it is due: at the
// start, then every turnInterval or third of the lease, whichever is
// shorter. The relay claims only between turns, so a bucket it gives up has
// no event in flight.
func (r *Relay) turn(ctx context.Context) error {
	if !r.turnDue() {
		return nil
	}
	// A bucket is given up only with nothing of it in flight; and the
	// claims start over, to look at what the last ones passed.
	if err := r.awaitSettle(); err != nil {
		return err
	}
	r.cursor = nil
	start := time.Now()
	r.turnTried = start
	rb, err := r.store.Rebalance(ctx, store.RebalanceRequest{RelayID: r.cfg.ID, Lease: r.cfg.Lease, Stream: r.cfg.Stream != nil})
	if err != nil {
		// A leader that cannot renew its stream lease lets go of the
		// stream until it can: it cannot checkpoint either, and a
		// PostgreSQL replication connection whose client confirms nothing
		// more holds a fast shutdown of the server until it closes. The
		// stream reopens at its checkpoint (docs/design.md, section 9.5).
		r.stopStream()
		return fmt.Errorf("take a turn at the bucket table: %w", err)
	}
	had := len(r.own.Buckets)
	r.own, r.lastTurn = rb.Ownership, start
	r.leading, r.stream = rb.Leading, rb.Stream
	// The lease's end on the local clock: the database's remaining time
	// from when the turn began, so clocks that disagree do not matter.
	r.deadline = start.Add(rb.Ownership.Expires.Sub(rb.Now))
	if o, ok := r.cfg.Observer.(RebalanceObserver); ok {
		o.Rebalanced(rb)
	}
	if rb.Acquired+rb.Released > 0 || had != len(rb.Ownership.Buckets) {
		r.log.Info("buckets rebalanced", "members", rb.Members, "owned", len(rb.Ownership.Buckets),
			"acquired", rb.Acquired, "released", rb.Released, "taken_over", rb.TakenOver)
	}
	if rb.TakenOver > 0 {
		r.log.Warn("took over buckets of a relay whose lease expired; its last batch may be published again",
			"buckets", rb.TakenOver)
	}
	return nil
}

// turnEvery is the interval between turns: turnInterval, or a third of
// the lease when that is shorter.
func (r *Relay) turnEvery() time.Duration { return min(turnInterval, r.cfg.Lease/3) }

// turnDue says whether the relay should take its turn now.
func (r *Relay) turnDue() bool {
	return r.lastTurn.IsZero() || time.Since(r.lastTurn) >= r.turnEvery()
}

// leave frees the relay's buckets for the others once it stopped.
func (r *Relay) leave(ctx context.Context) {
	leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := r.store.Leave(leaveCtx, r.cfg.ID); err != nil {
		r.log.Warn("could not free the relay's buckets; the others take them once its lease ends", "error", err)
	}
}

// runOnce takes a turn at the bucket table when due, then claims one batch,
// publishes it and settles it. It returns how many events the claim took or
// held, so Run knows whether more may be waiting.
func (r *Relay) runOnce(ctx context.Context) (int, error) {
	if err := r.turn(ctx); err != nil {
		return 0, err
	}
	if err := r.checkConfiguration(ctx); err != nil {
		return 0, err
	}
	if r.cfg.Stream != nil {
		return r.streamOnce(ctx)
	}
	return r.pollOnce(ctx, false)
}

// pollOnce claims one batch of the owned buckets (only what the change
// stream handed over, with handedOver), publishes it and settles it.
func (r *Relay) pollOnce(ctx context.Context, handedOver bool) (int, error) {
	if len(r.own.Buckets) == 0 {
		return 0, nil
	}
	if r.cursor == nil {
		// Starting over reads from the oldest ready event: the batch still
		// settling must be marked first, or it would be read again.
		if err := r.awaitSettle(); err != nil {
			return 0, err
		}
	}
	claim, err := r.store.Claim(ctx, store.ClaimRequest{
		Ownership: r.own, Limit: r.cfg.BatchSize, Policy: r.cfg.OrderPolicy, Known: r.known, After: r.cursor,
		HandedOver: handedOver, Watermark: r.stream.Watermark,
	})
	if err != nil {
		return 0, err
	}
	r.cursor = claim.Next
	r.cfg.Observer.Claimed(claim)
	if len(claim.Events) == 0 {
		if claim.Held == 0 {
			// Nothing is waiting, so nothing waits for a denied topic.
			r.configResolved()
		}
		return claim.Held, nil
	}
	err = r.publishAndSettle(ctx, claim, batchPoints{source: SourcePoll,
		afterPlan: failpoint.RelayAfterClaim, beforePublish: failpoint.RelayBeforePublish,
		afterAck: failpoint.RelayAfterAckBeforeMark,
	}, r.cursor != nil)
	return len(claim.Events) + claim.Held, err
}

// batchPoints name a batch's source (for the delivery delay) and the
// failpoints of its crash windows ("": none).
type batchPoints struct{ source, afterPlan, beforePublish, afterAck string }

// Sources of a published batch, as DeliveryObserver names them.
const (
	SourcePoll   = "poll"
	SourceStream = "stream"
)

// publishAndSettle publishes a claimed batch and settles it. With
// pipeline, a clean batch (every event acknowledged) settles in the
// background while the relay goes on.
func (r *Relay) publishAndSettle(ctx context.Context, claim store.Claim, fp batchPoints, pipeline bool) error {
	out, configErr := r.publish(ctx, claim, fp)
	// At most one batch settles in the background.
	if err := r.awaitSettle(); err != nil {
		return err
	}
	if pipeline && out.clean() && ctx.Err() == nil {
		// Every event is in Kafka: their successors may follow at once
		// (docs/design.md, section 6), and the marks are written while the
		// next batch is read and produced.
		r.known.Acknowledged(claim.Events)
		r.settleInBackground(ctx, claim, out)
		return r.settledConfiguration(nil, len(out.Published))
	}
	if err := r.settle(ctx, claim, out); err != nil {
		return err
	}
	return r.settledConfiguration(configErr, len(out.Published))
}

// publish produces a planned batch, through its crash windows'
// failpoints, and returns its outcome and the first configuration failure
// among its results.
func (r *Relay) publish(ctx context.Context, claim store.Claim, fp batchPoints) (outcome, *ConfigurationFailure) {
	inHand := func() []string {
		ids := make([]string, len(claim.Events))
		for i, e := range claim.Events {
			ids[i] = e.ID
		}
		return ids
	}
	failpoint.HitWithEvents(fp.afterPlan, inHand)

	// The batch is finished even if ctx is cancelled meanwhile (shutdown):
	// publishing is bounded by the buckets' lease, and after
	// ShutdownTimeout the records not yet acknowledged are given up.
	pubCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), r.deadline)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(r.cfg.ShutdownTimeout, cancel)
		context.AfterFunc(pubCtx, func() { t.Stop() })
	})
	defer stop()

	if fp.beforePublish != "" {
		failpoint.HitWithEvents(fp.beforePublish, inHand)
	}
	start := time.Now()
	results := r.publisher.Publish(pubCtx, claim.Events)
	r.cfg.Observer.PublishedBatch(time.Since(start), len(results))
	failpoint.HitWithEvents(fp.afterAck, inHand)
	return r.outcome(results, fp.source)
}

// outcome is a batch's store.Outcome as the relay reads it.
type outcome struct{ store.Outcome }

// clean says that Kafka acknowledged every event.
func (o outcome) clean() bool { return len(o.Failed) == 0 && len(o.Unsent) == 0 }

// settles says that settling it writes something of every event it does
// not publish: each failed, held behind a failure or stopped by a
// configuration failure. An event the relay gave up unsent (shutdown) has
// nothing to write, so a change stream must not checkpoint past it.
func (o outcome) settles() bool {
	for _, u := range o.Unsent {
		if u.Behind == "" && u.Class == "" {
			return false
		}
	}
	return true
}

// settle records a batch's outcome.
func (r *Relay) settle(ctx context.Context, claim store.Claim, out outcome) error {
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	settled, err := store.Settled{}, failpoint.Err(failpoint.RelaySettle)
	if err == nil {
		settled, err = r.store.Settle(settleCtx, claim, out.Outcome, r.cfg.OrderPolicy)
	}
	if err != nil {
		// The events stay unpublished: this relay, or the next owner of
		// their buckets, claims and publishes them again (duplicates,
		// never losses).
		return fmt.Errorf("settle batch of %d: %w", len(claim.Events), err)
	}
	r.cfg.Observer.Settled(settled)
	if settled.LostLeases > 0 {
		r.log.Warn("buckets taken over before the batch was settled; its events may be published again",
			"events", settled.LostLeases)
	}
	return nil
}

// settleInBackground settles a clean batch while the relay goes on; the
// next claim continues past its events, and awaitSettle collects the
// result.
func (r *Relay) settleInBackground(ctx context.Context, claim store.Claim, out outcome) {
	s := &settling{done: make(chan struct{})}
	r.settling = s
	go func() {
		defer close(s.done)
		s.err = r.settle(ctx, claim, out)
	}()
}

// awaitSettle waits for the batch settling in the background, if any, and
// returns its error.
func (r *Relay) awaitSettle() error {
	s := r.settling
	if s == nil {
		return nil
	}
	<-s.done
	r.settling = nil
	return s.err
}

// outcome turns per-event results into what Settle records, and returns
// the first configuration failure among them.
func (r *Relay) outcome(results []Result, source string) (outcome, *ConfigurationFailure) {
	delivery, _ := r.cfg.Observer.(DeliveryObserver)
	now := time.Now()
	var out outcome
	var configErr *ConfigurationFailure
	published := map[string]map[int32]int{}
	for _, res := range results {
		e := res.Event
		switch {
		case !res.Sent:
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Behind: res.Behind})
		case res.Err == nil:
			out.Published = append(out.Published, e.ID)
			if dropped := record.ReservedHeaders(e); len(dropped) > 0 {
				// Once per published event: the stored row (a foreign
				// writer's) keeps them, the record does not carry them.
				r.log.Warn("stored headers in herald's reserved prefix were left out of the record",
					"event_id", e.ID, "aggregate_type", e.AggregateType, "headers", dropped)
			}
			if delivery != nil {
				delivery.Delivered(source, now.Sub(e.OccurredAt))
			}
			if published[res.Topic] == nil {
				published[res.Topic] = map[int32]int{}
			}
			published[res.Topic][res.Partition]++
		case errors.Is(res.Err, context.Canceled):
			// Shutdown gave up on it: not a failure of the event.
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID})
		default:
			class, fatal := classify(res.Err)
			if kafka.IsConfiguration(class) {
				// Not the event's failure (docs/security.md): it is released
				// with its attempt given back, never quarantined, and the
				// relay, not the event, backs off.
				f := &ConfigurationFailure{Class: class, Topic: res.Topic, err: res.Err}
				if configErr == nil {
					configErr = f
				}
				out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Class: class, Message: f.Error()})
				continue
			}
			retryAfter := backoff.Delay(int(e.Attempts), r.cfg.BackoffBase, r.cfg.BackoffCap, rand.Float64())
			if fatal && suspectClass(class) && !res.Isolated {
				// Maybe another record's fault: retry soon, alone.
				fatal, retryAfter = false, r.cfg.BackoffBase
			}
			quarantine := fatal || int(e.Attempts) >= r.cfg.MaxAttempts
			f := store.Failure{
				EventID: e.ID, Class: class, Message: res.Err.Error(), Quarantine: quarantine,
				RetryAfter: retryAfter,
			}
			out.Failed = append(out.Failed, f)
			r.cfg.Observer.Failed(class, quarantine)
			level, retryIn := slog.LevelWarn, slog.String("retry_in", f.RetryAfter.String())
			if quarantine {
				level, retryIn = slog.LevelError, slog.Attr{} // no retry: an empty Attr is left out
			}
			r.log.Log(context.Background(), level, "publish failed",
				"event_id", e.ID, "aggregate_type", e.AggregateType, "attempt", e.Attempts,
				"error_class", class, "quarantined", quarantine, retryIn,
				"error", redact.Truncate(redact.Secrets(f.Message), 300))
		}
	}
	for topic, parts := range published {
		for p, n := range parts {
			r.cfg.Observer.Published(topic, p, n)
		}
	}
	return out, configErr
}
