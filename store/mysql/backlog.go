package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ReadBacklog implements store.OperationsDialect. Every figure comes from
// an indexed range (idx_ready, idx_failed_at); the ready rows are counted,
// and their oldest occurred_at found, from the index alone.
func (Dialect) ReadBacklog(ctx context.Context, q store.Querier) (store.Backlog, error) {
	b := store.Backlog{FailuresLastHour: map[string]int64{}, ReadyByClass: map[string]store.ClassBacklog{}}
	var (
		now         time.Time
		oldestReady sql.NullTime
	)
	// Covered by idx_ready (occurred_at is its last column): no row is read.
	// The age counts from occurred_at, not next_attempt_at, which every
	// release and retry moves (docs/metrics.md).
	err := q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6), COUNT(*), MIN(occurred_at)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)`).Scan(&now, &b.Ready, &oldestReady)
	if err != nil {
		return b, err
	}
	if oldestReady.Valid {
		b.OldestReadyAge = max(now.Sub(oldestReady.Time), 0)
	}

	// Rows outside the claim range: normally few (backoffs, held and
	// quarantined events).
	var (
		backingOff, held, quarantined, discarded, heldAggs sql.NullInt64
		oldestParked, oldestQuarantined                    sql.NullTime
	)
	const heldClass = store.ErrorClassHeld
	err = q.QueryRowContext(ctx, `SELECT
		SUM(quarantined_at IS NULL AND discarded_at IS NULL AND COALESCE(error_class, '') <> ?),
		SUM(quarantined_at IS NULL AND discarded_at IS NULL AND error_class = ?),
		SUM(quarantined_at IS NOT NULL AND discarded_at IS NULL),
		SUM(discarded_at IS NOT NULL),
		COUNT(DISTINCT CASE WHEN error_class = ? AND quarantined_at IS NULL AND discarded_at IS NULL
			THEN CONCAT(aggregate_type, 0x00, aggregate_id) END),
		MIN(CASE WHEN quarantined_at IS NULL AND discarded_at IS NULL THEN occurred_at END),
		MIN(CASE WHEN quarantined_at IS NOT NULL AND discarded_at IS NULL THEN occurred_at END)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at > ?`,
		heldClass, heldClass, heldClass, datetime(now)).
		Scan(&backingOff, &held, &quarantined, &discarded, &heldAggs, &oldestParked, &oldestQuarantined)
	if err != nil {
		return b, err
	}
	b.BackingOff, b.Held = backingOff.Int64, held.Int64
	b.Quarantined, b.Discarded, b.HeldAggregates = quarantined.Int64, discarded.Int64, heldAggs.Int64
	if oldestParked.Valid {
		b.OldestParkedAge = max(now.Sub(oldestParked.Time), 0)
	}
	if oldestQuarantined.Valid {
		b.OldestQuarantinedAge = max(now.Sub(oldestQuarantined.Time), 0)
	}

	// Ready rows with a class: given back by a configuration failure,
	// retried after a backoff, released after a hold. This reads the rows
	// of the ready range (error_class is in no index): as many as the
	// claimable backlog, which relays keep small.
	classes, err := q.QueryContext(ctx, `SELECT error_class, COUNT(*), MIN(occurred_at)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at <= ? AND error_class IS NOT NULL
		GROUP BY error_class`, datetime(now))
	if err != nil {
		return b, err
	}
	if err := store.ScanClassBacklog(classes, now, b.ReadyByClass); err != nil {
		return b, err
	}

	hourAgo := datetime(now.Add(-time.Hour))
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at > ?`, hourAgo).Scan(&b.PublishedLastHour); err != nil {
		return b, err
	}
	rows, err := q.QueryContext(ctx, `SELECT error_class, COUNT(*) FROM outbox_failures
		WHERE failed_at > ? GROUP BY error_class`, hourAgo)
	if err != nil {
		return b, err
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
