package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/store"
)

// StreamSource is a database's change stream: the relay's binlog source
// (docs/design.md, section 9). internal/cli adapts package
// store/mysql/binlog to it, so the relay depends on no dialect.
type StreamSource interface {
	// Head is where a stream opened now begins: every transaction before
	// it is visible to reads that start after Head returns.
	Head(ctx context.Context) (string, error)
	// Open reads the transactions after position from. A position the
	// database no longer has is ErrStreamPositionGone, from Open or from
	// the reader's Next.
	Open(ctx context.Context, from string) (StreamReader, error)
}

// StreamReader reads a change stream.
type StreamReader interface {
	// Next returns the next committed transaction's outbox inserts, or a
	// transaction without events that only moves the position.
	Next(ctx context.Context) (StreamTx, error)
	// Lag is how far the reader is behind the server: bytes (-1 when
	// unknown) and seconds.
	Lag() (bytes int64, seconds float64)
	Close() error
}

// StreamTx is one committed transaction of a change stream.
type StreamTx struct {
	Events []store.Event
	// Position is right after the transaction.
	Position string
}

// ErrStreamPositionGone: the stream position is no longer on the server
// (its binlogs were purged); the relay sweeps and starts again from the
// head (docs/design.md, section 9.3).
var ErrStreamPositionGone = errors.New("the change stream's position is no longer on the server")

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
	// streamTxBuffer is how many transactions the reader may read ahead.
	streamTxBuffer = 1024
	// handedOverInterval is how often the leader claims what the stream
	// handed to the polling path: backoffs and holds last seconds.
	handedOverInterval = time.Second
	// heartbeatCheckpoint is how often a position that only heartbeats
	// moved is checkpointed.
	heartbeatCheckpoint = time.Second
)

// streamer is the open change stream of a leading relay: a goroutine
// reading transactions into txs.
type streamer struct {
	reader StreamReader
	txs    chan StreamTx
	err    chan error
	cancel context.CancelFunc
	done   chan struct{}
	// position is the last one handed to a settlement; checkpointed when
	// it was last written.
	position     string
	checkpointed time.Time
	// handedOver is when the polling path last looked at what the stream
	// handed over.
	handedOver time.Time
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
	var reader StreamReader
	if from != "" {
		reader, err = r.cfg.Stream.Open(ctx, from)
		if errors.Is(err, ErrStreamPositionGone) {
			r.log.Warn("the stream's checkpoint is no longer on the server; sweeping the outbox before streaming again",
				"position", from)
			from = ""
		} else if err != nil {
			return fmt.Errorf("open the change stream at %s: %w", from, err)
		}
	}
	if from == "" {
		if from, err = r.sweep(ctx); err != nil {
			return err
		}
		if reader, err = r.cfg.Stream.Open(ctx, from); err != nil {
			return fmt.Errorf("open the change stream at %s: %w", from, err)
		}
	}
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &streamer{reader: reader, txs: make(chan StreamTx, streamTxBuffer), err: make(chan error, 1),
		cancel: cancel, done: make(chan struct{}), position: from, checkpointed: time.Now()}
	go func() {
		defer close(s.done)
		for {
			tx, err := reader.Next(streamCtx)
			if err != nil {
				s.err <- err
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
// taking the head the stream will start from, and checkpoints that head.
func (r *Relay) sweep(ctx context.Context) (string, error) {
	head, err := r.cfg.Stream.Head(ctx)
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
	return head, nil
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
	position := ""
	wait := time.NewTimer(r.turnEvery())
	defer wait.Stop()
	select {
	case tx := <-s.txs:
		events, position = append(events, tx.Events...), tx.Position
	case err := <-s.err:
		// The next iteration opens the stream again at the checkpoint (a
		// position gone from the server: after a sweep).
		return 0, r.streamFailed(fmt.Errorf("change stream: %w", err))
	case <-wait.C:
		return 0, nil
	case <-ctx.Done():
		return 0, nil
	}
collect:
	for len(events) < r.cfg.BatchSize {
		select {
		case tx := <-s.txs:
			events, position = append(events, tx.Events...), tx.Position
		default:
			break collect
		}
	}
	checkpoint := &store.Checkpoint{Epoch: r.stream.Epoch, Position: position}
	if len(events) == 0 {
		// Only heartbeats: move the position now and then.
		if time.Since(s.checkpointed) < heartbeatCheckpoint {
			return 0, nil
		}
		if err := r.awaitSettle(); err != nil {
			return 0, r.streamFailed(err)
		}
		return 0, r.saveCheckpoint(ctx, *checkpoint)
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
		// Nothing to publish (all skipped or handed over).
		if err := r.awaitSettle(); err != nil {
			return len(events), r.streamFailed(err)
		}
		return len(events), r.saveCheckpoint(ctx, *checkpoint)
	}
	err = r.publishAndSettle(ctx, claim, batchPoints{source: SourceStream,
		afterPlan: failpoint.StreamAfterRead, afterAck: failpoint.StreamAfterAckBeforeCheckpoint,
	}, checkpoint, true)
	if err != nil {
		return len(events), r.streamFailed(err)
	}
	s.position, s.checkpointed = position, time.Now()
	if o, ok := r.cfg.Observer.(StreamObserver); ok {
		o.Checkpointed(s.checkpointed)
	}
	return len(events), nil
}

// saveCheckpoint moves the position outside a settlement.
func (r *Relay) saveCheckpoint(ctx context.Context, cp store.Checkpoint) error {
	if err := r.store.SaveCheckpoint(ctx, r.cfg.ID, cp); err != nil {
		return r.streamFailed(err)
	}
	r.streamer.position, r.streamer.checkpointed = cp.Position, time.Now()
	if o, ok := r.cfg.Observer.(StreamObserver); ok {
		o.Checkpointed(r.streamer.checkpointed)
	}
	return nil
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
