package mysql

import (
	"context"

	"github.com/herald-outbox/herald/store"
)

// The core runs these after LockBuckets, in the same transaction, naming
// only events of buckets the relay still owns (docs/design.md, F1).

// MarkPublished implements store.SettleDialect.
func (Dialect) MarkPublished(ctx context.Context, q store.Querier, ids []string) (int, error) {
	n, err := store.RowsAffected(q.ExecContext(ctx, updateEvents+`
		SET published_at = UTC_TIMESTAMP(6), last_error = NULL, error_class = NULL
		WHERE id IN (`+placeholders(len(ids))+`) AND published_at IS NULL`, anySlice(ids)...))
	return int(n), err
}

// Fail implements store.SettleDialect.
func (Dialect) Fail(ctx context.Context, q store.Querier, f store.FailureUpdate) (bool, error) {
	var quarantinedAt any // NULL unless quarantined
	retryAt := datetime(f.RetryAt)
	if f.Quarantine {
		quarantinedAt, retryAt = datetime(f.At), datetime(never)
	}
	n, err := store.RowsAffected(q.ExecContext(ctx, updateEvents+`
		SET attempts = attempts + 1, quarantined_at = ?, next_attempt_at = ?, last_error = ?, error_class = ?
		WHERE id = ? AND published_at IS NULL`,
		quarantinedAt, retryAt, f.Message, f.Class, f.EventID))
	return n > 0, err
}

// LogFailure implements store.SettleDialect.
func (Dialect) LogFailure(ctx context.Context, q store.Querier, f store.FailureUpdate, relayID string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO outbox_failures
		(failed_at, event_id, relay_id, attempt, error_class, error, quarantined)
		SELECT ?, id, ?, attempts, ?, ?, ? FROM outbox_events WHERE id = ?`,
		datetime(f.At), relayID, f.Class, f.Message, f.Quarantine, f.EventID)
	return err
}

// Release implements store.SettleDialect.
func (Dialect) Release(ctx context.Context, q store.Querier, r store.ReleaseUpdate) (bool, error) {
	n, err := store.RowsAffected(q.ExecContext(ctx, updateEvents+`
		SET next_attempt_at = ?, error_class = ?, last_error = ?
		WHERE id = ? AND published_at IS NULL`,
		holdUntil(r.Hold), r.Class, r.Message, r.EventID))
	return n > 0, err
}
