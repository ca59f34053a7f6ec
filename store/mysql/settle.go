package mysql

import (
	"context"

	"github.com/herald-outbox/herald/store"
)

// fence is the WHERE clause every update of a claimed row carries: the rows
// must still belong to this lease (docs/design.md, invariant F1).
const fence = ` AND locked_by = ? AND locked_at = ? AND published_at IS NULL`

func fenceArgs(lease store.Lease) []any {
	return []any{lease.RelayID, datetime(lease.LockedAt)}
}

// MarkPublished implements store.SettleDialect.
func (Dialect) MarkPublished(ctx context.Context, q store.Querier, ids []string, lease store.Lease) (int, error) {
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET published_at = UTC_TIMESTAMP(6), last_error = NULL, error_class = NULL
		WHERE id IN (`+placeholders(len(ids))+`)`+fence, append(anySlice(ids), fenceArgs(lease)...)...))
	return int(n), err
}

// Fail implements store.SettleDialect.
func (Dialect) Fail(ctx context.Context, q store.Querier, f store.FailureUpdate, lease store.Lease) (bool, error) {
	var quarantinedAt any // NULL unless quarantined
	retryAt := datetime(f.RetryAt)
	if f.Quarantine {
		quarantinedAt, retryAt = datetime(f.At), datetime(never)
	}
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET quarantined_at = ?, next_attempt_at = ?, locked_by = NULL, locked_at = NULL, last_error = ?, error_class = ?
		WHERE id = ?`+fence,
		append([]any{quarantinedAt, retryAt, f.Message, f.Class, f.EventID}, fenceArgs(lease)...)...))
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
func (Dialect) Release(ctx context.Context, q store.Querier, r store.ReleaseUpdate, lease store.Lease) (bool, error) {
	// Not sent means not attempted: give the claim's attempt back.
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = ?, attempts = GREATEST(attempts, 1) - 1, locked_by = NULL, locked_at = NULL,
		    error_class = ?, last_error = ?
		WHERE id = ?`+fence,
		append([]any{holdUntil(r.Hold), r.Class, r.Message, r.EventID}, fenceArgs(lease)...)...))
	return n > 0, err
}
