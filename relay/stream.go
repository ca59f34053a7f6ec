package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

// StreamObserver is told what the stream does; an Observer may implement
// it (package metrics does).
type StreamObserver interface {
	// Streamed reports one batch: its events, those handed to the polling
	// path, and the reader's lag.
	Streamed(events, handedOver int, lagBytes int64, lagSeconds float64)
	// Checkpointed reports that the position moved.
	Checkpointed(at time.Time)
}

const (
	// streamTxBuffer is how many transactions (or chunks) the reader may
	// read ahead, and streamReadAhead how many events they may hold in all,
	// in batches: memory stays bounded whatever a transaction's size
	// (docs/design.md, section 9.7).
	streamTxBuffer  = 1024
	streamReadAhead = 4
	// handedOverInterval is how often the leader claims what the stream
	// handed to the polling path: backoffs and holds last seconds.
	handedOverInterval = time.Second
	// streamCheckpointInterval is how often the position of clean batches
	// (and of heartbeats) is checkpointed: a streamed event costs no write
	// of its own, the checkpoint publishes every event before it
	// (docs/design.md, section 9.2).
	streamCheckpointInterval = time.Second
	// watermarkInterval is how often the leader samples a new watermark
	// (section 9.3).
	watermarkInterval = time.Second
)

// streamer is the open change stream of a leading relay: a goroutine
// reading transactions into txs.
type streamer struct {
	reader changestream.Reader
	txs    chan changestream.Tx
	err    chan error
	cancel context.CancelFunc
	done   chan struct{}
	// readAhead holds a token for every event read but not yet taken by
	// the relay (up to its capacity for a chunk larger than that).
	readAhead chan struct{}
	// position is the end of the last transaction every event of which is
	// acknowledged or written (the next checkpoint); checkpointed is the
	// last one written, at savedAt; acknowledged counts the events Kafka
	// acknowledged since.
	position     string
	checkpointed string
	savedAt      time.Time
	acknowledged int
	// handedOver is when the polling path last looked at what the stream
	// handed over.
	handedOver time.Time
	// sample is the watermark sample in progress (nil: none), head the
	// stream's head read after it ("" until read), sampledAt when the last
	// one was taken (section 9.3).
	sample    *store.WatermarkSample
	head      string
	sampledAt time.Time
}

// reserve takes read-ahead tokens for n events; false when ctx ended.
func (s *streamer) reserve(ctx context.Context, n int) bool {
	for range min(n, cap(s.readAhead)) {
		select {
		case s.readAhead <- struct{}{}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// take gives back the read-ahead tokens of a transaction the relay took.
func (s *streamer) take(tx changestream.Tx) {
	for range min(len(tx.Events), cap(s.readAhead)) {
		<-s.readAhead
	}
}

// streamOnce is a stream relay's iteration: a follower waits; a leader
// makes sure its stream is open (sweeping first when it has no position),
// gives the polling path what it was handed, and publishes one batch of
// the stream.
func (r *Relay) streamOnce(ctx context.Context) (int, error) {
	if !r.leading {
		r.stopStream()
		return 0, nil
	}
	if !r.own.All() {
		// The other relays give their buckets up at their next turn.
		return 0, nil
	}
	if r.streamer == nil {
		if err := r.startStream(ctx); err != nil {
			return 0, err
		}
	}
	if time.Since(r.streamer.handedOver) >= handedOverInterval {
		r.streamer.handedOver = time.Now()
		if _, err := r.pollOnce(ctx, true); err != nil {
			return 0, err
		}
	}
	return r.streamBatch(ctx)
}

// startStream opens the stream at the checkpoint, or, without one or when
// it is gone, sweeps the ready events through the polling path and opens
// it at the head taken before the sweep (section 9.3).
func (r *Relay) startStream(ctx context.Context) error {
	failpoint.Hit(failpoint.StreamAfterLead)
	row, _, err := r.store.Stream(ctx)
	if err != nil {
		return err
	}
	if row.Leader != r.cfg.ID || row.Epoch != r.stream.Epoch {
		r.leading = false
		return nil // deposed since the turn
	}
	epoch, from := row.Epoch, row.Position
	var reader changestream.Reader
	if from != "" {
		reader, err = r.cfg.Stream.Open(ctx, from)
		if errors.Is(err, changestream.ErrPositionGone) {
			r.log.Warn("the stream's checkpoint is no longer on the server; sweeping the outbox before streaming again",
				"position", from)
			from = ""
		} else if err != nil {
			return fmt.Errorf("open the change stream at %s: %w", from, err)
		}
	}
	if from == "" {
		if from, err = r.sweep(ctx, row.Position != ""); err != nil {
			return err
		}
		if reader, err = r.cfg.Stream.Open(ctx, from); err != nil {
			return fmt.Errorf("open the change stream at %s: %w", from, err)
		}
	}
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &streamer{reader: reader, txs: make(chan changestream.Tx, streamTxBuffer), err: make(chan error, 1),
		cancel: cancel, done: make(chan struct{}), readAhead: make(chan struct{}, streamReadAhead*r.cfg.BatchSize),
		position: from, checkpointed: from, savedAt: time.Now()}
	go func() {
		defer close(s.done)
		for {
			tx, err := reader.Next(streamCtx)
			if err != nil {
				s.err <- err
				return
			}
			if !s.reserve(streamCtx, len(tx.Events)) {
				return
			}
			select {
			case s.txs <- tx:
			case <-streamCtx.Done():
				return
			}
		}
	}()
	r.streamer = s
	r.log.Info("streaming", "position", from, "epoch", epoch)
	return nil
}

// sweep publishes every ready event through the polling path, after
// taking the head the stream will start from, and checkpoints that head;
// positionLost says the checkpoint was gone from the server.
func (r *Relay) sweep(ctx context.Context, positionLost bool) (string, error) {
	var head string
	var err error
	if sw, ok := r.cfg.Stream.(changestream.Sweeper); ok {
		head, err = sw.SweepHead(ctx)
	} else {
		head, err = r.cfg.Stream.Head(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("read the change stream's head: %w", err)
	}
	r.log.Info("sweeping the outbox before streaming", "head", head)
	r.cursor = nil
	swept := 0
	for {
		n, err := r.pollOnce(ctx, false)
		if err != nil {
			return "", fmt.Errorf("sweep: %w", err)
		}
		if err := r.awaitSettle(); err != nil {
			return "", fmt.Errorf("sweep: %w", err)
		}
		if n == 0 && r.cursor == nil {
			break
		}
		swept += n
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if err := r.store.SaveCheckpoint(ctx, r.cfg.ID, store.Checkpoint{Epoch: r.stream.Epoch, Position: head}); err != nil {
		return "", fmt.Errorf("sweep: %w", err)
	}
	r.log.Info("sweep done", "events", swept, "head", head)
	if o, ok := r.cfg.Observer.(SweepObserver); ok {
		o.Swept(positionLost, swept)
	}
	return head, nil
}

// finishStream checkpoints what the stream published, when it leads, and
// closes it: the relay stops.
func (r *Relay) finishStream(ctx context.Context) {
	if r.streamer == nil {
		return
	}
	if r.leading {
		cpCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel()
		if err := r.checkpoint(cpCtx, true); err != nil {
			r.log.Warn("could not checkpoint the stream at shutdown; the next leader publishes its last events again",
				"error", err)
		}
	}
	r.stopStream()
}

// stopStream closes the stream (the relay no longer leads, or stops).
func (r *Relay) stopStream() {
	s := r.streamer
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
	s.reader.Close()
	r.streamer = nil
	r.cursor = nil
	r.log.Info("stream closed")
}

// streamBatch publishes what the reader has ready, up to a batch, waiting
// for it until the next turn is due. It returns how many events it read.
func (r *Relay) streamBatch(ctx context.Context) (int, error) {
	s := r.streamer
	var events []store.Event
	position := "" // the end of the last whole transaction taken
	takeTx := func(tx changestream.Tx) {
		s.take(tx)
		events = append(events, tx.Events...)
		if tx.Position != "" {
			position = tx.Position
		}
	}
	wait := time.NewTimer(r.turnEvery())
	defer wait.Stop()
	select {
	case tx := <-s.txs:
		takeTx(tx)
	case err := <-s.err:
		// The next iteration opens the stream again at the checkpoint (a
		// position gone from the server: after a sweep).
		return 0, r.streamFailed(fmt.Errorf("change stream: %w", err))
	case <-wait.C:
		return 0, r.checkpoint(ctx, false)
	case <-ctx.Done():
		return 0, nil
	}
collect:
	for len(events) < r.cfg.BatchSize {
		select {
		case tx := <-s.txs:
			takeTx(tx)
		default:
			break collect
		}
	}
	if len(events) == 0 {
		// Only heartbeats: the position moves with the next checkpoint.
		s.advance(position)
		return 0, r.checkpoint(ctx, false)
	}
	claim, err := r.store.PlanStream(ctx, r.own, events, r.cfg.OrderPolicy, r.known)
	if err != nil {
		return 0, r.streamFailed(err)
	}
	r.cfg.Observer.Claimed(claim)
	if o, ok := r.cfg.Observer.(StreamObserver); ok {
		lagBytes, lagSeconds := s.reader.Lag()
		o.Streamed(len(events), claim.Held, lagBytes, lagSeconds)
	}
	if len(claim.Events) == 0 {
		// Nothing to publish: all skipped, or handed over (the holds are
		// written).
		s.advance(position)
		return len(events), r.checkpoint(ctx, false)
	}
	out, configErr := r.publish(ctx, claim, batchPoints{source: SourceStream,
		afterPlan: failpoint.StreamAfterRead, afterAck: failpoint.StreamAfterAckBeforeCheckpoint})
	switch {
	case out.clean():
		// Nothing to write: the next checkpoint publishes these events
		// (docs/design.md, section 9.2), and their successors may follow at
		// once (section 6).
		r.known.Acknowledged(claim.Events)
		s.acknowledged += len(claim.Events)
		s.advance(position)
		if err := r.checkpoint(ctx, false); err != nil {
			return len(events), err
		}
		return len(events), r.settledConfiguration(nil, len(out.Published))
	case !out.settles():
		// Given up unsent (shutdown): nothing would say where those events
		// stand, so no checkpoint may pass them; the stream is read again
		// from the checkpoint.
		return len(events), r.streamFailed(errors.New("a streamed batch was given up unsent; it is read again from the checkpoint"))
	}
	// Failures and holds are written with the checkpoint past them, before
	// the next batch is planned (S1).
	if position == "" {
		position = s.position
	}
	cp, err := r.nextCheckpoint(ctx, position)
	if err != nil {
		return len(events), r.streamFailed(err)
	}
	out.Checkpoint = &cp
	if err := r.settle(ctx, claim, out); err != nil {
		return len(events), r.streamFailed(err)
	}
	s.advance(position)
	r.checkpointed(cp)
	return len(events), r.settledConfiguration(configErr, len(out.Published))
}

// advance moves the next checkpoint to position, the end of a transaction
// every event of which is now acknowledged or written ("" moves nothing).
func (s *streamer) advance(position string) {
	if position != "" {
		s.position = position
	}
}

// checkpoint writes the stream's position, when it moved, or a watermark
// is ready, and streamCheckpointInterval passed since the last one (or
// now, with force).
func (r *Relay) checkpoint(ctx context.Context, force bool) error {
	s := r.streamer
	if !force && time.Since(s.savedAt) < streamCheckpointInterval {
		return nil
	}
	cp, err := r.nextCheckpoint(ctx, s.position)
	if err != nil {
		return r.streamFailed(err)
	}
	if cp.Position == s.checkpointed && cp.Watermark.IsZero() {
		s.savedAt = time.Now()
		return nil
	}
	if s.acknowledged > 0 {
		err = failpoint.Err(failpoint.StreamCheckpoint)
	}
	if err == nil {
		err = r.store.SaveCheckpoint(ctx, r.cfg.ID, cp)
	}
	switch {
	case errors.Is(err, store.ErrStreamLost):
		return r.streamFailed(err)
	case err != nil:
		// Everything before the position is acknowledged or written, so the
		// stream goes on: a later checkpoint publishes it (S1).
		return fmt.Errorf("checkpoint: %w", err)
	}
	r.checkpointed(cp)
	return nil
}

// nextCheckpoint is the checkpoint at position, the end of a whole
// transaction, with the watermark of section 9.3 when position reached the
// head read after its sample. It takes the next sample when one is due.
func (r *Relay) nextCheckpoint(ctx context.Context, position string) (store.Checkpoint, error) {
	s := r.streamer
	cp := store.Checkpoint{Epoch: r.stream.Epoch, Position: position}
	if s.head != "" {
		reached, err := r.cfg.Stream.Reached(position, s.head)
		if err != nil {
			return cp, fmt.Errorf("watermark: %w", err)
		}
		if reached {
			cp.Watermark = s.sample.At
			s.sample, s.head = nil, ""
		}
	}
	if s.sample == nil && time.Since(s.sampledAt) >= watermarkInterval {
		sample, err := r.store.SampleWatermark(ctx)
		if err != nil {
			return cp, fmt.Errorf("watermark: %w", err)
		}
		s.sample, s.sampledAt = &sample, time.Now()
	}
	if s.sample != nil && s.head == "" {
		// The head is read only once every transaction the sample waits
		// for has ended: everything they wrote lies before it.
		ended, err := r.store.WatermarkEnded(ctx, *s.sample)
		if err != nil {
			return cp, fmt.Errorf("watermark: %w", err)
		}
		if ended {
			if s.head, err = r.cfg.Stream.Head(ctx); err != nil {
				return cp, fmt.Errorf("watermark: read the change stream's head: %w", err)
			}
		}
	}
	return cp, nil
}

// checkpointed records that cp was written.
func (r *Relay) checkpointed(cp store.Checkpoint) {
	s := r.streamer
	s.checkpointed, s.savedAt, s.acknowledged = cp.Position, time.Now(), 0
	if c, ok := s.reader.(changestream.Confirmer); ok {
		c.Confirm(cp.Position)
	}
	if o, ok := r.cfg.Observer.(StreamObserver); ok {
		o.Checkpointed(s.savedAt)
	}
}

// streamFailed closes the stream after a failure: it starts again from
// the checkpoint at the next iteration (a lost lease: once it leads again).
func (r *Relay) streamFailed(err error) error {
	if errors.Is(err, store.ErrStreamLost) && r.leading {
		r.leading = false
		r.log.Warn("lost the stream lease; another relay streams now")
	}
	r.stopStream()
	return err
}
