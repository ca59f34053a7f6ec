package mysql

import (
	"context"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Cleanup deletes by primary key: select a batch of keys in the order of
// an index on the time column, then delete exactly those, rechecking the
// cutoff, so a DELETE never walks or locks a range live writers use.

// DeletePublished implements store.OperationsDialect. Published rows sort
// after NULL in idx_ready: the select walks only them.
func (Dialect) DeletePublished(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return deleteBatch(ctx, q, cutoff, limit, 1,
		`SELECT id FROM outbox_events FORCE INDEX (idx_ready)
		 WHERE published_at IS NOT NULL AND published_at < ? ORDER BY published_at LIMIT ?`,
		`DELETE FROM outbox_events WHERE published_at IS NOT NULL AND published_at < ? AND id IN (%s)`)
}

// DeleteStreamed implements store.OperationsDialect: untouched rows walk
// idx_ready's unpublished range from its oldest next_attempt_at.
func (Dialect) DeleteStreamed(ctx context.Context, q store.Querier, before time.Time, limit int) (int64, error) {
	return deleteBatch(ctx, q, before, limit, 1,
		`SELECT id FROM outbox_events FORCE INDEX (idx_ready)
		 WHERE published_at IS NULL AND next_attempt_at < ? AND `+untouched+` ORDER BY next_attempt_at LIMIT ?`,
		`DELETE FROM outbox_events WHERE next_attempt_at < ? AND `+untouched+` AND id IN (%s)`)
}

// DeleteFailures implements store.OperationsDialect: idx_failed_at in
// order, each failure's event by primary key. An event once published,
// discarded or deleted stays so, so the DELETE need not check it again.
func (Dialect) DeleteFailures(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return deleteBatch(ctx, q, cutoff, limit, 1,
		`SELECT f.id FROM outbox_failures f FORCE INDEX (idx_failed_at)
		 LEFT JOIN outbox_events e ON e.id = f.event_id
		 WHERE f.failed_at < ? AND (e.id IS NULL OR e.published_at IS NOT NULL OR e.discarded_at IS NOT NULL)
		 ORDER BY f.failed_at LIMIT ?`,
		`DELETE FROM outbox_failures WHERE failed_at < ? AND id IN (%s)`)
}

// DeleteConsumed implements store.OperationsDialect.
func (Dialect) DeleteConsumed(ctx context.Context, q store.Querier, cutoff time.Time, limit int) (int64, error) {
	return deleteBatch(ctx, q, cutoff, limit, 2,
		`SELECT consumer_name, event_id FROM consumed_events WHERE consumed_at < ? ORDER BY consumed_at LIMIT ?`,
		`DELETE FROM consumed_events WHERE consumed_at < ? AND (consumer_name, event_id) IN (%s)`)
}

// deleteBatch selects up to limit keys of keyColumns string columns with
// selectKeys (args: cutoff, limit) and deletes them with deleteKeys (%s:
// the key placeholders; args: cutoff, keys).
func deleteBatch(ctx context.Context, q store.Querier, cutoff time.Time, limit, keyColumns int, selectKeys, deleteKeys string) (int64, error) {
	at := datetime(cutoff)
	rows, err := q.QueryContext(ctx, selectKeys, at, limit)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	args := []any{at}
	vals := make([]string, keyColumns)
	ptrs := make([]any, keyColumns)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	keys := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		for _, v := range vals {
			args = append(args, v)
		}
		keys++
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	rows.Close()
	if keys == 0 {
		return 0, nil
	}
	marks := placeholders(keys)
	if keyColumns > 1 {
		tuple := "(" + placeholders(keyColumns) + ")"
		marks = strings.TrimSuffix(strings.Repeat(tuple+", ", keys), ", ")
	}
	return store.RowsAffected(q.ExecContext(ctx, strings.Replace(deleteKeys, "%s", marks, 1), args...))
}
