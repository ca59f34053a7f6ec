package postgres

import (
	"context"

	"github.com/herald-outbox/herald/store"
)

// The core runs these after LockBuckets, in the same transaction, naming
// only events of buckets the relay still owns (docs/design.md, F1).

// MarkPublished implements store.SettleDialect.
func (Dialect) MarkPublished(ctx context.Context, q store.Querier, ids []string) (int, error) {
	n, err := store.RowsAffected(q.ExecContext(ctx, `UPDATE outbox_events
		SET published_at = statement_timestamp(), last_error = NULL, error_class = NULL
		WHERE id = ANY($1::uuid[]) AND published_at IS NULL`, ids))
	return int(n), err
}

// Fail implements store.SettleDialect.
func (Dialect) Fail(ctx context.Context, q store.Querier, f store.FailureUpdate) (bool, error) {
	var quarantinedAt, retryAt any = nil, f.RetryAt.UTC() // NULL unless quarantined; NULL retry = never
	if f.Quarantine {
		quarantinedAt, retryAt = f.At.UTC(), nil
	}
	n, err := store.RowsAffected(q.ExecContext(ctx, `UPDATE outbox_events
		SET attempts = attempts + 1, quarantined_at = $1, next_attempt_at = COALESCE($2::timestamptz, `+never+`),
		    last_error = $3, error_class = $4
		WHERE id = $5 AND published_at IS NULL`,
		quarantinedAt, retryAt, f.Message, f.Class, f.EventID))
	return n > 0, err
}

// LogFailure implements store.SettleDialect.
func (Dialect) LogFailure(ctx context.Context, q store.Querier, f store.FailureUpdate, relayID string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO outbox_failures
		(failed_at, event_id, relay_id, attempt, error_class, error, quarantined)
		SELECT $1, id, $2, attempts, $3, $4, $5 FROM outbox_events WHERE id = $6`,
		f.At.UTC(), relayID, f.Class, f.Message, f.Quarantine, f.EventID)
	return err
}

// Release implements store.SettleDialect.
func (Dialect) Release(ctx context.Context, q store.Querier, r store.ReleaseUpdate) (bool, error) {
	n, err := store.RowsAffected(q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = COALESCE($1::timestamptz, `+never+`), error_class = $2, last_error = $3
		WHERE id = $4 AND published_at IS NULL`,
		holdUntil(r.Hold), r.Class, r.Message, r.EventID))
	return n > 0, err
}
