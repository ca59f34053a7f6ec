package store

import (
	"context"
	"fmt"
	"time"
)

// CleanupRequest says what one cleanup pass may delete.
type CleanupRequest struct {
	// Retention keeps published events younger than this (the replay
	// window). Required.
	Retention time.Duration
	// InboxRetention keeps consumed_events rows younger than this; 0 leaves
	// the inbox alone. It must exceed Retention: a replayed event must still
	// find its inbox row, or it would be applied twice.
	InboxRetention time.Duration
	// BatchSize is the most rows one DELETE removes. Required.
	BatchSize int
	// Pause is the wait between batches, to leave the database to live
	// traffic.
	Pause time.Duration
	// MaxBatches stops a pass after this many batches per table (0: until
	// done).
	MaxBatches int
}

// Validate checks a request; errors name the field.
func (r CleanupRequest) Validate() error {
	switch {
	case r.Retention <= 0:
		return fmt.Errorf("retention must be positive, got %v", r.Retention)
	case r.BatchSize < 1 || r.BatchSize > 10000:
		return fmt.Errorf("batch size must be 1..10000, got %d", r.BatchSize)
	case r.Pause < 0:
		return fmt.Errorf("pause must not be negative, got %v", r.Pause)
	case r.InboxRetention != 0 && r.InboxRetention <= r.Retention:
		return fmt.Errorf("inbox retention (%v) must be longer than the outbox retention, the replay window (%v): "+
			"an event replayed from the outbox must still find its inbox row", r.InboxRetention, r.Retention)
	}
	return nil
}

// CleanupReport is what a cleanup pass deleted.
type CleanupReport struct {
	Events   int64 `json:"events_deleted"`
	Failures int64 `json:"failures_deleted"`
	Inbox    int64 `json:"inbox_rows_deleted"`
	Batches  int   `json:"batches"`
	// LargestBatch is the most rows one statement deleted.
	LargestBatch int64 `json:"largest_batch"`
}

// Cleanup deletes, in batches with pauses, the outbox events that are
// published AND older than the retention (never an unpublished, quarantined
// or discarded one; a change stream's untouched rows below its watermark
// are published), the failure records past the retention of events
// published, discarded or deleted (never those of an event still
// unpublished: an operator reads them in `herald quarantine show`), and
// inbox rows older than the inbox retention. Events go first, so the
// failures of the events it deleted go in the same pass.
func (s *Store) Cleanup(ctx context.Context, req CleanupRequest) (CleanupReport, error) {
	var rep CleanupReport
	if err := req.Validate(); err != nil {
		return rep, err
	}
	now, err := s.dialect.Now(ctx, s.db)
	if err != nil {
		return rep, fmt.Errorf("cleanup: read clock: %w", err)
	}
	cutoff := now.Add(-req.Retention)
	if err := s.deleteInBatches(ctx, req, s.dialect.DeletePublished, cutoff, &rep, &rep.Events); err != nil {
		return rep, fmt.Errorf("cleanup: events: %w", err)
	}
	// What a change stream published without a write: the untouched rows
	// below its watermark (docs/design.md, invariant S2), past retention by
	// their insert time.
	w, err := s.watermark(ctx)
	if err != nil {
		return rep, fmt.Errorf("cleanup: %w", err)
	}
	if !w.IsZero() {
		if err := s.deleteInBatches(ctx, req, s.dialect.DeleteStreamed, minTime(w, cutoff), &rep, &rep.Events); err != nil {
			return rep, fmt.Errorf("cleanup: streamed events: %w", err)
		}
	}
	if err := s.deleteInBatches(ctx, req, s.dialect.DeleteFailures, cutoff, &rep, &rep.Failures); err != nil {
		return rep, fmt.Errorf("cleanup: failure log: %w", err)
	}
	if req.InboxRetention > 0 {
		if err := s.deleteInBatches(ctx, req, s.dialect.DeleteConsumed, now.Add(-req.InboxRetention), &rep, &rep.Inbox); err != nil {
			return rep, fmt.Errorf("cleanup: inbox: %w", err)
		}
	}
	return rep, nil
}

// deleteInBatches runs del until a batch comes back short (or MaxBatches),
// pausing between batches to leave the database to live traffic.
func (s *Store) deleteInBatches(ctx context.Context, req CleanupRequest,
	del func(context.Context, Querier, time.Time, int) (int64, error),
	cutoff time.Time, rep *CleanupReport, total *int64) error {
	for batches := 0; req.MaxBatches == 0 || batches < req.MaxBatches; batches++ {
		n, err := del(ctx, s.db, cutoff, req.BatchSize)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		*total += n
		rep.Batches++
		rep.LargestBatch = max(rep.LargestBatch, n)
		if n < int64(req.BatchSize) {
			return nil
		}
		if req.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(req.Pause):
			}
		}
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
