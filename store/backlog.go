package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Backlog is the outbox at a glance: what `herald status` shows first and
// what the relay's backlog gauges report. Dialects read every figure from
// an indexed range.
type Backlog struct {
	// Unpublished rows by state. Under a change stream, Ready includes
	// Streaming: the untouched rows from its watermark on, which the stream
	// published or is about to (docs/design.md, section 9.4).
	Ready       int64 `json:"ready"`
	Streaming   int64 `json:"streaming"`
	BackingOff  int64 `json:"backing_off"`
	Held        int64 `json:"held"`
	Quarantined int64 `json:"quarantined"`
	Discarded   int64 `json:"discarded"`
	// HeldAggregates counts aggregates with events held behind a failing,
	// quarantined or in-flight earlier event.
	HeldAggregates int64 `json:"held_aggregates"`
	// PublishedLastHour counts events marked published in the last hour.
	PublishedLastHour int64 `json:"published_last_hour"`
	// OldestReadyAge is the age of the oldest claimable event: the time
	// since its occurred_at, however often it was claimed and given back
	// (a configuration failure releases it with next_attempt_at reset at
	// every round) or retried; 0 when none is claimable.
	// docs/metrics.md says why occurred_at and not next_attempt_at.
	OldestReadyAge time.Duration `json:"oldest_ready_age_ns"`
	// OldestParkedAge is the age (since occurred_at) of the oldest event that
	// is backing off or held.
	OldestParkedAge time.Duration `json:"oldest_parked_age_ns"`
	// OldestQuarantinedAge is the age of the oldest quarantined event.
	OldestQuarantinedAge time.Duration `json:"oldest_quarantined_age_ns"`
	// FailuresLastHour counts failed attempts by error class.
	FailuresLastHour map[string]int64 `json:"failures_last_hour"`
	// ReadyByClass counts the claimable events whose row carries an error
	// class (what stopped them last), by class, with the oldest one's age
	// since occurred_at. An event given back because of a Kafka
	// configuration failure (docs/security.md) stays claimable with its
	// class set and is logged nowhere else: this is where status finds it.
	ReadyByClass map[string]ClassBacklog `json:"ready_by_class"`
}

// ClassBacklog is the claimable events of one error class.
type ClassBacklog struct {
	Events int64 `json:"events"`
	// OldestAge is the time since the oldest one's occurred_at.
	OldestAge time.Duration `json:"oldest_age_ns"`
}

// ScanClassBacklog reads the rows of a dialect's ready-by-class query
// (error_class, count, oldest occurred_at) into into, ages measured at the
// database's now, and closes rows.
func ScanClassBacklog(rows *sql.Rows, now time.Time, into map[string]ClassBacklog) error {
	defer rows.Close()
	for rows.Next() {
		var (
			class  string
			c      ClassBacklog
			oldest sql.NullTime
		)
		if err := rows.Scan(&class, &c.Events, &oldest); err != nil {
			return err
		}
		if oldest.Valid {
			c.OldestAge = max(now.Sub(oldest.Time), 0)
		}
		into[class] = c
	}
	return rows.Err()
}

// ReadBacklog measures the outbox.
func (s *Store) ReadBacklog(ctx context.Context) (Backlog, error) {
	watermark, err := s.watermark(ctx)
	if err != nil {
		return Backlog{}, fmt.Errorf("backlog: %w", err)
	}
	return s.dialect.ReadBacklog(ctx, s.db, watermark)
}

// Now reads the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.dialect.Now(ctx, s.db)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.db.PingContext(ctx)
}
