package postgres

import (
	"context"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Cleanup deletes a batch chosen in the order of an index on the time
// column (LIMIT in a subquery: PostgreSQL's DELETE has none). The
// subquery's FOR UPDATE re-checks its condition on each row's newest
// version, and SKIP LOCKED passes over rows a relay or an operator is
// changing at that moment, so cleanup never waits on live traffic; a
// passed-over row is deleted by a later pass. PostgreSQL takes no gap
// locks, so no range is locked against writers.

// DeletePublished implements store.OperationsDialect. Published rows sort
// after the unpublished ones (NULL last) in idx_ready: the subquery walks
// only them.
func (Dialect) DeletePublished(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return store.RowsAffected(q.ExecContext(ctx, `DELETE FROM outbox_events WHERE id IN (
		SELECT id FROM outbox_events WHERE published_at IS NOT NULL AND published_at < $1
		ORDER BY published_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff.UTC(), limit))
}

// DeleteStreamed implements store.OperationsDialect: untouched rows walk
// idx_ready's unpublished range from its oldest next_attempt_at.
func (Dialect) DeleteStreamed(ctx context.Context, q store.Querier, before time.Time, limit int) (int64, error) {
	return store.RowsAffected(q.ExecContext(ctx, `DELETE FROM outbox_events WHERE id IN (
		SELECT e.id FROM outbox_events e WHERE e.published_at IS NULL AND e.next_attempt_at < $1 AND `+untouched("e")+`
		ORDER BY e.published_at, e.next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, before.UTC(), limit))
}

// DeleteFailures implements store.OperationsDialect: idx_failures_failed_at
// in order, each failure's event by primary key. An event once published,
// discarded or deleted stays so.
func (Dialect) DeleteFailures(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return store.RowsAffected(q.ExecContext(ctx, `DELETE FROM outbox_failures WHERE id IN (
		SELECT f.id FROM outbox_failures f LEFT JOIN outbox_events e ON e.id = f.event_id
		WHERE f.failed_at < $1 AND (e.id IS NULL OR e.published_at IS NOT NULL OR e.discarded_at IS NOT NULL)
		ORDER BY f.failed_at LIMIT $2 FOR UPDATE OF f SKIP LOCKED)`, cutoff.UTC(), limit))
}

// DeleteConsumed implements store.OperationsDialect.
func (Dialect) DeleteConsumed(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return store.RowsAffected(q.ExecContext(ctx, `DELETE FROM consumed_events WHERE (consumer_name, event_id) IN (
		SELECT consumer_name, event_id FROM consumed_events WHERE consumed_at < $1
		ORDER BY consumed_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff.UTC(), limit))
}
