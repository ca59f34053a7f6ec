package store

import (
	"context"
	"time"
)

// Backlog is the outbox at a glance: what `herald status` shows first and
// what the relay's backlog gauges report. Dialects read every figure from
// an indexed range.
type Backlog struct {
	// Unpublished rows by state.
	Ready       int64 `json:"ready"`
	BackingOff  int64 `json:"backing_off"`
	Held        int64 `json:"held"`
	Quarantined int64 `json:"quarantined"`
	Discarded   int64 `json:"discarded"`
	// HeldAggregates counts aggregates with events held behind a failing,
	// quarantined or in-flight earlier event.
	HeldAggregates int64 `json:"held_aggregates"`
	// PublishedLastHour counts events marked published in the last hour.
	PublishedLastHour int64 `json:"published_last_hour"`
	// OldestReadyAge is how long the longest-waiting claimable event has
	// been claimable; 0 when none is.
	OldestReadyAge time.Duration `json:"oldest_ready_age_ns"`
	// OldestParkedAge is the age (since occurred_at) of the oldest event that
	// is backing off or held.
	OldestParkedAge time.Duration `json:"oldest_parked_age_ns"`
	// OldestQuarantinedAge is the age of the oldest quarantined event.
	OldestQuarantinedAge time.Duration `json:"oldest_quarantined_age_ns"`
	// FailuresLastHour counts failed attempts by error class.
	FailuresLastHour map[string]int64 `json:"failures_last_hour"`
}

// ReadBacklog measures the outbox.
func (s *Store) ReadBacklog(ctx context.Context) (Backlog, error) {
	return s.dialect.ReadBacklog(ctx, s.db)
}

// Now reads the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.dialect.Now(ctx, s.db)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.db.PingContext(ctx)
}
