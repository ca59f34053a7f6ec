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

// Tally is a range of rows as a dialect counts it for a Backlog: how many,
// and the oldest occurred_at among them (zero when there is none).
type Tally struct {
	Rows   int64
	Oldest time.Time
}

// Parked is the unpublished rows outside the claim range (next_attempt_at
// after now), as a dialect counts them for a Backlog.
type Parked struct {
	// BackingOff and Held are the rows neither quarantined nor discarded,
	// without and with the held error class.
	BackingOff, Held int64
	// Quarantined (not discarded) and Discarded rows.
	Quarantined, Discarded int64
	// HeldAggregates counts the aggregates of the held rows.
	HeldAggregates int64
	// OldestParked is the oldest occurred_at of the rows neither
	// quarantined nor discarded, OldestQuarantined of the quarantined ones
	// (zero when there is none).
	OldestParked, OldestQuarantined time.Time
}

// BacklogDialect counts the outbox for Store.ReadBacklog and
// Store.CountUnpublished, each figure from an indexed range. It adds
// nothing up and measures no age: the core does, from the raw figures.
// "Claimable" rows are unpublished with next_attempt_at at or before the
// database's now; "untouched" ones are as their writer inserted them
// (docs/design.md, rule T).
type BacklogDialect interface {
	// CountUnpublished counts the rows in the polling path's hands
	// (error_class set) that are not discarded, and the untouched rows
	// from watermark on (zero: every untouched row).
	CountUnpublished(ctx context.Context, q Querier, watermark time.Time) (int64, error)
	// ReadClaimable tallies the claimable rows whose next_attempt_at is at
	// or after from (zero: every claimable row), and returns the database's
	// now the range ended at.
	ReadClaimable(ctx context.Context, q Querier, from time.Time) (now time.Time, claimable Tally, err error)
	// ReadAroundWatermark counts the untouched rows with next_attempt_at
	// from watermark to now, and tallies the rows in the polling path's
	// hands whose next_attempt_at is before watermark.
	ReadAroundWatermark(ctx context.Context, q Querier, watermark, now time.Time) (untouched int64, handedOver Tally, err error)
	// ReadParked counts the unpublished rows with next_attempt_at after now.
	ReadParked(ctx context.Context, q Querier, now time.Time) (Parked, error)
	// ReadClaimableByClass tallies the rows in the polling path's hands
	// with next_attempt_at at or before now, by error class.
	ReadClaimableByClass(ctx context.Context, q Querier, now time.Time) (map[string]Tally, error)
	// CountPublishedSince counts the rows with published_at after since.
	CountPublishedSince(ctx context.Context, q Querier, since time.Time) (int64, error)
	// CountUntouched counts the untouched rows with next_attempt_at after
	// from and before to.
	CountUntouched(ctx context.Context, q Querier, from, to time.Time) (int64, error)
	// CountFailuresSince counts the failure log's rows with failed_at after
	// since, by error class.
	CountFailuresSince(ctx context.Context, q Querier, since time.Time) (map[string]int64, error)
}

// ScanTallies reads rows of (error class, count, oldest occurred_at) by
// class and closes rows.
func ScanTallies(rows *sql.Rows, err error) (map[string]Tally, error) {
	return scanMap(rows, err, func(rows *sql.Rows, class *string, t *Tally) error {
		return rows.Scan(class, &t.Rows, UTC(&t.Oldest))
	})
}

// ScanCounts reads rows of (error class, count) by class and closes rows.
func ScanCounts(rows *sql.Rows, err error) (map[string]int64, error) {
	return scanMap(rows, err, func(rows *sql.Rows, class *string, n *int64) error {
		return rows.Scan(class, n)
	})
}

// ReadBacklog measures the outbox. Under a change stream (a watermark
// set) the untouched rows before the watermark are published (invariant
// S2), those from it on are the stream's (Streaming: published or on their
// way), and the rows in the polling path's hands (rule T) are claimable on
// either side of it.
func (s *Store) ReadBacklog(ctx context.Context) (Backlog, error) {
	watermark, err := s.watermark(ctx)
	if err != nil {
		return Backlog{}, fmt.Errorf("backlog: %w", err)
	}
	b, err := s.readBacklog(ctx, watermark)
	if err != nil {
		return b, fmt.Errorf("backlog: %w", err)
	}
	return b, nil
}

func (s *Store) readBacklog(ctx context.Context, watermark time.Time) (Backlog, error) {
	d := s.dialect
	b := Backlog{ReadyByClass: map[string]ClassBacklog{}}
	// The ages count from occurred_at, not next_attempt_at, which every
	// release and retry moves (docs/metrics.md).
	now, claimable, err := d.ReadClaimable(ctx, s.db, watermark)
	if err != nil {
		return b, fmt.Errorf("claimable rows: %w", err)
	}
	b.Ready, b.OldestReadyAge = claimable.Rows, age(now, claimable.Oldest)
	if !watermark.IsZero() {
		streaming, below, err := d.ReadAroundWatermark(ctx, s.db, watermark, now)
		if err != nil {
			return b, fmt.Errorf("rows around the watermark: %w", err)
		}
		b.Streaming, b.Ready = streaming, b.Ready+below.Rows
		b.OldestReadyAge = max(b.OldestReadyAge, age(now, below.Oldest))
	}

	// Rows outside the claim range: normally few (backoffs, held and
	// quarantined events).
	p, err := d.ReadParked(ctx, s.db, now)
	if err != nil {
		return b, fmt.Errorf("parked rows: %w", err)
	}
	b.BackingOff, b.Held, b.Quarantined, b.Discarded = p.BackingOff, p.Held, p.Quarantined, p.Discarded
	b.HeldAggregates = p.HeldAggregates
	b.OldestParkedAge, b.OldestQuarantinedAge = age(now, p.OldestParked), age(now, p.OldestQuarantined)

	// Claimable rows with a class: given back by a configuration failure,
	// retried after a backoff, released after a hold.
	byClass, err := d.ReadClaimableByClass(ctx, s.db, now)
	if err != nil {
		return b, fmt.Errorf("claimable rows by class: %w", err)
	}
	for class, t := range byClass {
		b.ReadyByClass[class] = ClassBacklog{Events: t.Rows, OldestAge: age(now, t.Oldest)}
	}

	hourAgo := now.Add(-time.Hour)
	if b.PublishedLastHour, err = d.CountPublishedSince(ctx, s.db, hourAgo); err != nil {
		return b, fmt.Errorf("published rows: %w", err)
	}
	if watermark.After(hourAgo) {
		// A change stream's: the untouched rows written in the hour and
		// below its watermark (invariant S2).
		streamed, err := d.CountUntouched(ctx, s.db, hourAgo, watermark)
		if err != nil {
			return b, fmt.Errorf("streamed rows: %w", err)
		}
		b.PublishedLastHour += streamed
	}
	if b.FailuresLastHour, err = d.CountFailuresSince(ctx, s.db, hourAgo); err != nil {
		return b, fmt.Errorf("failures: %w", err)
	}
	return b, nil
}

// age is the time from occurred to now, none below zero; 0 when occurred
// is zero (no such row).
func age(now, occurred time.Time) time.Duration {
	if occurred.IsZero() {
		return 0
	}
	return max(now.Sub(occurred), 0)
}

// Now reads the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	return s.dialect.Now(ctx, s.db)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.db.PingContext(ctx)
}
