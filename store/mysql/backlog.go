package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ReadBacklog implements store.OperationsDialect. Every figure comes from
// an indexed range (idx_ready, idx_handed_over, idx_failed_at); the ready
// rows are counted, and their oldest occurred_at found, from the index
// alone.
func (Dialect) ReadBacklog(ctx context.Context, q store.Querier, watermark time.Time) (store.Backlog, error) {
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
		WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6) AND next_attempt_at >= ?`,
		watermarkFloor(watermark)).Scan(&now, &b.Ready, &oldestReady)
	if err != nil {
		return b, err
	}
	if oldestReady.Valid {
		b.OldestReadyAge = max(now.Sub(oldestReady.Time), 0)
	}
	if !watermark.IsZero() {
		// Under a change stream, the untouched rows from the watermark on
		// are the stream's (published, or on their way); below it, only
		// the rows in the polling path's hands are unpublished
		// (docs/design.md, section 9.4), through idx_handed_over.
		var streaming, below int64
		var oldestBelow sql.NullTime
		if err := q.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
			 WHERE published_at IS NULL AND next_attempt_at >= ? AND next_attempt_at <= ? AND error_class IS NULL),
			COUNT(*), MIN(occurred_at)
			FROM outbox_events FORCE INDEX (idx_handed_over) WHERE handed_over_at < ?`,
			datetime(watermark), datetime(now), datetime(watermark)).Scan(&streaming, &below, &oldestBelow); err != nil {
			return b, err
		}
		b.Streaming, b.Ready = streaming, b.Ready+below
		if oldestBelow.Valid {
			b.OldestReadyAge = max(b.OldestReadyAge, now.Sub(oldestBelow.Time))
		}
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
		FROM outbox_events FORCE INDEX (idx_handed_over)
		WHERE handed_over_at <= ?
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
	if !watermark.IsZero() && watermark.After(now.Add(-time.Hour)) {
		// A change stream's: the untouched rows written in the hour and
		// below its watermark.
		var streamed int64
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
			WHERE published_at IS NULL AND next_attempt_at > ? AND next_attempt_at < ? AND `+untouched,
			hourAgo, datetime(watermark)).Scan(&streamed); err != nil {
			return b, err
		}
		b.PublishedLastHour += streamed
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

// CountUnpublished implements store.OperationsDialect: the rows in the
// polling path's hands through idx_handed_over, and the untouched ones at or
// after the watermark through idx_ready.
func (Dialect) CountUnpublished(ctx context.Context, q store.Querier, watermark time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_handed_over)
		 WHERE handed_over_at IS NOT NULL AND discarded_at IS NULL) +
		(SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		 WHERE published_at IS NULL AND next_attempt_at >= ? AND error_class IS NULL)`, watermarkFloor(watermark)).Scan(&n)
	return n, err
}

// watermarkFloor is the least next_attempt_at of a row that may be
// unpublished: the watermark, or DATETIME's least without one.
func watermarkFloor(watermark time.Time) string {
	if watermark.IsZero() {
		return "1000-01-01 00:00:00"
	}
	return datetime(watermark)
}
