package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Backlog is the outbox at a glance: what `herald status` shows first and
// what the relay's backlog gauges report. Every figure comes from an indexed
// range (idx_ready, idx_failed_at); the ready rows are counted from the index
// alone.
type Backlog struct {
	// Unpublished rows by state.
	Ready       int64 `json:"ready"`
	Leased      int64 `json:"leased"`
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
	// is leased, backing off or held.
	OldestParkedAge time.Duration `json:"oldest_parked_age_ns"`
	// OldestQuarantinedAge is the age of the oldest quarantined event.
	OldestQuarantinedAge time.Duration `json:"oldest_quarantined_age_ns"`
	// FailuresLastHour counts failed attempts by error class.
	FailuresLastHour map[string]int64 `json:"failures_last_hour"`
}

// ReadBacklog measures the outbox.
func (s *Store) ReadBacklog(ctx context.Context) (Backlog, error) {
	b := Backlog{FailuresLastHour: map[string]int64{}}
	var (
		now         time.Time
		oldestReady sql.NullTime
	)
	// Covered by idx_ready: no row is read.
	err := s.db.QueryRowContext(ctx, `SELECT NOW(6), COUNT(*), MIN(next_attempt_at)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at <= NOW(6)`).Scan(&now, &b.Ready, &oldestReady)
	if err != nil {
		return b, fmt.Errorf("backlog: ready: %w", err)
	}
	if oldestReady.Valid {
		b.OldestReadyAge = max(now.Sub(oldestReady.Time), 0)
	}

	// Rows outside the claim range: normally few (leases of running relays,
	// backoffs, held and quarantined events).
	var (
		leased, backingOff, held, quarantined, discarded, heldAggs sql.NullInt64
		oldestParked, oldestQuarantined                            sql.NullTime
	)
	err = s.db.QueryRowContext(ctx, `SELECT
		SUM(locked_by IS NOT NULL AND next_attempt_at < ?),
		SUM(locked_by IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL AND COALESCE(error_class, '') <> ?),
		SUM(locked_by IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL AND error_class = ?),
		SUM(quarantined_at IS NOT NULL AND discarded_at IS NULL),
		SUM(discarded_at IS NOT NULL),
		COUNT(DISTINCT CASE WHEN error_class = ? AND quarantined_at IS NULL AND discarded_at IS NULL
			THEN CONCAT(aggregate_type, 0x00, aggregate_id) END),
		MIN(CASE WHEN quarantined_at IS NULL AND discarded_at IS NULL THEN occurred_at END),
		MIN(CASE WHEN quarantined_at IS NOT NULL AND discarded_at IS NULL THEN occurred_at END)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at > ?`,
		store.Never, ErrorClassHeld, ErrorClassHeld, ErrorClassHeld, now).
		Scan(&leased, &backingOff, &held, &quarantined, &discarded, &heldAggs, &oldestParked, &oldestQuarantined)
	if err != nil {
		return b, fmt.Errorf("backlog: parked: %w", err)
	}
	b.Leased, b.BackingOff, b.Held = leased.Int64, backingOff.Int64, held.Int64
	b.Quarantined, b.Discarded, b.HeldAggregates = quarantined.Int64, discarded.Int64, heldAggs.Int64
	if oldestParked.Valid {
		b.OldestParkedAge = max(now.Sub(oldestParked.Time), 0)
	}
	if oldestQuarantined.Valid {
		b.OldestQuarantinedAge = max(now.Sub(oldestQuarantined.Time), 0)
	}

	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at > ? - INTERVAL 1 HOUR`, now).Scan(&b.PublishedLastHour); err != nil {
		return b, fmt.Errorf("backlog: published: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT error_class, COUNT(*) FROM outbox_failures
		WHERE failed_at > ? - INTERVAL 1 HOUR GROUP BY error_class`, now)
	if err != nil {
		return b, fmt.Errorf("backlog: failures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		var n int64
		if err := rows.Scan(&class, &n); err != nil {
			return b, err
		}
		b.FailuresLastHour[class] = n
	}
	return b, rows.Err()
}
