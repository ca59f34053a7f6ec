package postgres

import (
	"context"
	"time"

	"github.com/herald-outbox/herald/store"
)

// The figures of store.BacklogDialect, each from an indexed range
// (idx_ready, idx_handed_over, idx_failures_failed_at).

// orNull is t as a timestamptz argument, NULL when t is zero.
func orNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// ReadClaimable implements store.BacklogDialect; idx_ready holds
// next_attempt_at and occurred_at.
func (Dialect) ReadClaimable(ctx context.Context, q store.Querier, from time.Time) (time.Time, store.Tally, error) {
	var now time.Time
	var t store.Tally
	err := q.QueryRowContext(ctx, `SELECT statement_timestamp(), count(*), min(occurred_at)
		FROM outbox_events
		WHERE published_at IS NULL AND next_attempt_at <= statement_timestamp()
		  AND next_attempt_at >= COALESCE($1::timestamptz, '-infinity')`, orNull(from)).
		Scan(store.UTC(&now), &t.Rows, store.UTC(&t.Oldest))
	return now, t, err
}

// ReadAroundWatermark implements store.BacklogDialect: the rows in the
// polling path's hands through idx_handed_over.
func (Dialect) ReadAroundWatermark(ctx context.Context, q store.Querier, watermark, now time.Time) (int64, store.Tally, error) {
	var untouched int64
	var t store.Tally
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NULL
		   AND next_attempt_at >= $1 AND next_attempt_at <= $2),
		count(*), min(occurred_at)
		FROM outbox_events WHERE published_at IS NULL AND error_class IS NOT NULL AND next_attempt_at < $1`,
		watermark.UTC(), now.UTC()).Scan(&untouched, &t.Rows, store.UTC(&t.Oldest))
	return untouched, t, err
}

// ReadParked implements store.BacklogDialect: the rows past the claim
// range, normally few (backoffs, held and quarantined events).
func (Dialect) ReadParked(ctx context.Context, q store.Querier, now time.Time) (store.Parked, error) {
	var p store.Parked
	const parked = `quarantined_at IS NULL AND discarded_at IS NULL`
	err := q.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE `+parked+` AND error_class IS DISTINCT FROM $1),
		count(*) FILTER (WHERE `+parked+` AND error_class = $1),
		count(*) FILTER (WHERE quarantined_at IS NOT NULL AND discarded_at IS NULL),
		count(*) FILTER (WHERE discarded_at IS NOT NULL),
		count(DISTINCT (aggregate_type, aggregate_id))
			FILTER (WHERE error_class = $1 AND quarantined_at IS NULL AND discarded_at IS NULL),
		min(occurred_at) FILTER (WHERE quarantined_at IS NULL AND discarded_at IS NULL),
		min(occurred_at) FILTER (WHERE quarantined_at IS NOT NULL AND discarded_at IS NULL)
		FROM outbox_events
		WHERE published_at IS NULL AND next_attempt_at > $2`, store.ErrorClassHeld, now.UTC()).
		Scan(&p.BackingOff, &p.Held, &p.Quarantined, &p.Discarded, &p.HeldAggregates,
			store.UTC(&p.OldestParked), store.UTC(&p.OldestQuarantined))
	return p, err
}

// ReadClaimableByClass implements store.BacklogDialect. error_class is in
// no index: this reads the claimable backlog's rows, which relays keep
// small.
func (Dialect) ReadClaimableByClass(ctx context.Context, q store.Querier, now time.Time) (map[string]store.Tally, error) {
	return store.ScanTallies(q.QueryContext(ctx, `SELECT error_class, count(*), min(occurred_at)
		FROM outbox_events
		WHERE published_at IS NULL AND error_class IS NOT NULL AND next_attempt_at <= $1
		GROUP BY error_class`, now.UTC()))
}

// CountPublishedSince implements store.BacklogDialect.
func (Dialect) CountPublishedSince(ctx context.Context, q store.Querier, since time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox_events WHERE published_at > $1`, since.UTC()).Scan(&n)
	return n, err
}

// CountUntouched implements store.BacklogDialect.
func (Dialect) CountUntouched(ctx context.Context, q store.Querier, from, to time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox_events e
		WHERE e.published_at IS NULL AND e.next_attempt_at > $1 AND e.next_attempt_at < $2 AND `+untouched("e"),
		from.UTC(), to.UTC()).Scan(&n)
	return n, err
}

// CountFailuresSince implements store.BacklogDialect.
func (Dialect) CountFailuresSince(ctx context.Context, q store.Querier, since time.Time) (map[string]int64, error) {
	return store.ScanCounts(q.QueryContext(ctx, `SELECT error_class, count(*) FROM outbox_failures
		WHERE failed_at > $1 GROUP BY error_class`, since.UTC()))
}

// CountUnpublished implements store.BacklogDialect: the rows in the
// polling path's hands through idx_handed_over, and the untouched ones at or
// after the watermark through idx_ready.
func (Dialect) CountUnpublished(ctx context.Context, q store.Querier, watermark time.Time) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NOT NULL AND discarded_at IS NULL) +
		(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NULL
		   AND next_attempt_at >= COALESCE($1::timestamptz, '-infinity'))`, orNull(watermark)).Scan(&n)
	return n, err
}
