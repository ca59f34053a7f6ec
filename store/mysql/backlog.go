package mysql

import (
	"context"
	"time"

	"github.com/herald-outbox/herald/store"
)

// The figures of store.BacklogDialect, each from an indexed range
// (idx_ready, idx_handed_over, idx_failed_at).

// ReadClaimable implements store.BacklogDialect. Covered by idx_ready
// (occurred_at is its last column): no row is read.
func (Dialect) ReadClaimable(ctx context.Context, q store.Querier, from time.Time) (time.Time, store.Tally, error) {
	var now time.Time
	var t store.Tally
	err := q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6), COUNT(*), MIN(occurred_at)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6) AND next_attempt_at >= ?`,
		watermarkFloor(from)).Scan(&now, &t.Rows, store.UTC(&t.Oldest))
	return now, t, err
}

// ReadAroundWatermark implements store.BacklogDialect: the untouched rows
// through idx_ready, those in the polling path's hands through
// idx_handed_over.
func (Dialect) ReadAroundWatermark(ctx context.Context, q store.Querier, watermark, now time.Time) (int64, store.Tally, error) {
	var untouched int64
	var t store.Tally
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		 WHERE published_at IS NULL AND next_attempt_at >= ? AND next_attempt_at <= ? AND error_class IS NULL),
		COUNT(*), MIN(occurred_at)
		FROM outbox_events FORCE INDEX (idx_handed_over) WHERE handed_over_at < ?`,
		datetime(watermark), datetime(now), datetime(watermark)).Scan(&untouched, &t.Rows, store.UTC(&t.Oldest))
	return untouched, t, err
}

// ReadParked implements store.BacklogDialect: the rows past the claim
// range, normally few (backoffs, held and quarantined events).
func (Dialect) ReadParked(ctx context.Context, q store.Querier, now time.Time) (store.Parked, error) {
	var p store.Parked
	const heldClass = store.ErrorClassHeld
	err := q.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(quarantined_at IS NULL AND discarded_at IS NULL AND COALESCE(error_class, '') <> ?), 0),
		COALESCE(SUM(quarantined_at IS NULL AND discarded_at IS NULL AND error_class = ?), 0),
		COALESCE(SUM(quarantined_at IS NOT NULL AND discarded_at IS NULL), 0),
		COALESCE(SUM(discarded_at IS NOT NULL), 0),
		COUNT(DISTINCT CASE WHEN error_class = ? AND quarantined_at IS NULL AND discarded_at IS NULL
			THEN CONCAT(aggregate_type, 0x00, aggregate_id) END),
		MIN(CASE WHEN quarantined_at IS NULL AND discarded_at IS NULL THEN occurred_at END),
		MIN(CASE WHEN quarantined_at IS NOT NULL AND discarded_at IS NULL THEN occurred_at END)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at > ?`,
		heldClass, heldClass, heldClass, datetime(now)).
		Scan(&p.BackingOff, &p.Held, &p.Quarantined, &p.Discarded, &p.HeldAggregates,
			store.UTC(&p.OldestParked), store.UTC(&p.OldestQuarantined))
	return p, err
}

// ReadClaimableByClass implements store.BacklogDialect. This reads the
// rows of the ready range (error_class is in no index): as many as the
// claimable backlog, which relays keep small.
func (Dialect) ReadClaimableByClass(ctx context.Context, q store.Querier, now time.Time) (map[string]store.Tally, error) {
	return store.ScanTallies(q.QueryContext(ctx, `SELECT error_class, COUNT(*), MIN(occurred_at)
		FROM outbox_events FORCE INDEX (idx_handed_over)
		WHERE handed_over_at <= ?
		GROUP BY error_class`, datetime(now)))
}

// CountPublishedSince implements store.BacklogDialect: published rows
// sort after NULL in idx_ready.
func (Dialect) CountPublishedSince(ctx context.Context, q store.Querier, since time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at > ?`, datetime(since)).Scan(&n)
	return n, err
}

// CountUntouched implements store.BacklogDialect.
func (Dialect) CountUntouched(ctx context.Context, q store.Querier, from, to time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at IS NULL AND next_attempt_at > ? AND next_attempt_at < ? AND `+untouched,
		datetime(from), datetime(to)).Scan(&n)
	return n, err
}

// CountFailuresSince implements store.BacklogDialect.
func (Dialect) CountFailuresSince(ctx context.Context, q store.Querier, since time.Time) (map[string]int64, error) {
	return store.ScanCounts(q.QueryContext(ctx, `SELECT error_class, COUNT(*) FROM outbox_failures
		WHERE failed_at > ? GROUP BY error_class`, datetime(since)))
}

// CountUnpublished implements store.BacklogDialect: the rows in the
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
