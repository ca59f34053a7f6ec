package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ReadBacklog implements store.OperationsDialect. Every figure comes from
// an indexed range (idx_ready, idx_handed_over, idx_failures_failed_at).
func (Dialect) ReadBacklog(ctx context.Context, q store.Querier, watermark time.Time) (store.Backlog, error) {
	b := store.Backlog{FailuresLastHour: map[string]int64{}, ReadyByClass: map[string]store.ClassBacklog{}}
	var (
		now         time.Time
		oldestReady sql.NullTime
		floor       any // NULL: no watermark
	)
	if !watermark.IsZero() {
		floor = watermark.UTC()
	}
	// The age counts from occurred_at, not next_attempt_at, which every
	// release and retry moves (docs/metrics.md); idx_ready holds both.
	err := q.QueryRowContext(ctx, `SELECT statement_timestamp(), count(*), min(occurred_at)
		FROM outbox_events
		WHERE published_at IS NULL AND next_attempt_at <= statement_timestamp()
		  AND next_attempt_at >= COALESCE($1::timestamptz, '-infinity')`, floor).Scan(&now, &b.Ready, &oldestReady)
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
			(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NULL
			   AND next_attempt_at >= $1 AND next_attempt_at <= $2),
			count(*), min(occurred_at)
			FROM outbox_events WHERE published_at IS NULL AND error_class IS NOT NULL AND next_attempt_at < $1`,
			watermark.UTC(), now).Scan(&streaming, &below, &oldestBelow); err != nil {
			return b, err
		}
		b.Streaming, b.Ready = streaming, b.Ready+below
		if oldestBelow.Valid {
			b.OldestReadyAge = max(b.OldestReadyAge, now.Sub(oldestBelow.Time))
		}
	}

	// Rows outside the claim range: normally few (backoffs, held and
	// quarantined events).
	var oldestParked, oldestQuarantined sql.NullTime
	const parked = `quarantined_at IS NULL AND discarded_at IS NULL`
	err = q.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE `+parked+` AND error_class IS DISTINCT FROM $1),
		count(*) FILTER (WHERE `+parked+` AND error_class = $1),
		count(*) FILTER (WHERE quarantined_at IS NOT NULL AND discarded_at IS NULL),
		count(*) FILTER (WHERE discarded_at IS NOT NULL),
		count(DISTINCT (aggregate_type, aggregate_id))
			FILTER (WHERE error_class = $1 AND quarantined_at IS NULL AND discarded_at IS NULL),
		min(occurred_at) FILTER (WHERE quarantined_at IS NULL AND discarded_at IS NULL),
		min(occurred_at) FILTER (WHERE quarantined_at IS NOT NULL AND discarded_at IS NULL)
		FROM outbox_events
		WHERE published_at IS NULL AND next_attempt_at > $2`, store.ErrorClassHeld, now).
		Scan(&b.BackingOff, &b.Held, &b.Quarantined, &b.Discarded, &b.HeldAggregates,
			&oldestParked, &oldestQuarantined)
	if err != nil {
		return b, err
	}
	if oldestParked.Valid {
		b.OldestParkedAge = max(now.Sub(oldestParked.Time), 0)
	}
	if oldestQuarantined.Valid {
		b.OldestQuarantinedAge = max(now.Sub(oldestQuarantined.Time), 0)
	}

	// Ready rows with a class: given back by a configuration failure,
	// retried after a backoff, released after a hold (error_class is in no
	// index: this reads the claimable backlog's rows, which relays keep
	// small).
	classes, err := q.QueryContext(ctx, `SELECT error_class, count(*), min(occurred_at)
		FROM outbox_events
		WHERE published_at IS NULL AND error_class IS NOT NULL AND next_attempt_at <= $1
		GROUP BY error_class`, now)
	if err != nil {
		return b, err
	}
	if err := store.ScanClassBacklog(classes, now, b.ReadyByClass); err != nil {
		return b, err
	}

	hourAgo := now.Add(-time.Hour)
	if !watermark.IsZero() && watermark.After(hourAgo) {
		// A change stream's: the untouched rows written in the hour and
		// below its watermark.
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox_events e
			WHERE e.published_at IS NULL AND e.next_attempt_at > $1 AND e.next_attempt_at < $2 AND `+untouched("e"),
			hourAgo, watermark.UTC()).Scan(&b.PublishedLastHour); err != nil {
			return b, err
		}
	}
	var marked int64
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox_events
		WHERE published_at > $1`, hourAgo).Scan(&marked); err != nil {
		return b, err
	}
	b.PublishedLastHour += marked
	rows, err := q.QueryContext(ctx, `SELECT error_class, count(*) FROM outbox_failures
		WHERE failed_at > $1 GROUP BY error_class`, hourAgo)
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
	var from any // NULL: every untouched row
	if !watermark.IsZero() {
		from = watermark.UTC()
	}
	var n int64
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NOT NULL AND discarded_at IS NULL) +
		(SELECT count(*) FROM outbox_events WHERE published_at IS NULL AND error_class IS NULL
		   AND next_attempt_at >= COALESCE($1::timestamptz, '-infinity'))`, from).Scan(&n)
	return n, err
}
