package postgres

import (
	"context"

	"github.com/herald-outbox/herald/store"
)

// fence is the WHERE clause every update of a claimed row carries: the rows
// must still belong to this lease (docs/design.md, invariant F1). $1 and $2
// are the lease's relay id and locked_at. At READ COMMITTED an update that
// waited for a concurrent claim's lock re-checks it on the row's newest
// version, so a lease taken over meanwhile no longer matches.
const fence = ` AND locked_by = $1 AND locked_at = $2 AND published_at IS NULL`

// MarkPublished implements store.SettleDialect.
func (Dialect) MarkPublished(ctx context.Context, q store.Querier, ids []string, lease store.Lease) (int, error) {
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET published_at = statement_timestamp(), last_error = NULL, error_class = NULL
		WHERE id = ANY($3::uuid[])`+fence, lease.RelayID, lease.LockedAt, ids))
	return int(n), err
}

// Fail implements store.SettleDialect.
func (Dialect) Fail(ctx context.Context, q store.Querier, f store.FailureUpdate, lease store.Lease) (bool, error) {
	var quarantinedAt, retryAt any = nil, f.RetryAt.UTC() // NULL unless quarantined; NULL retry = never
	if f.Quarantine {
		quarantinedAt, retryAt = f.At.UTC(), nil
	}
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET quarantined_at = $3, next_attempt_at = COALESCE($4::timestamptz, `+never+`),
		    locked_by = NULL, locked_at = NULL, last_error = $5, error_class = $6
		WHERE id = $7`+fence,
		lease.RelayID, lease.LockedAt, quarantinedAt, retryAt, f.Message, f.Class, f.EventID))
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
func (Dialect) Release(ctx context.Context, q store.Querier, eventID string, h store.Hold, lease store.Lease) (bool, error) {
	// Not sent means not attempted: give the claim's attempt back.
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = COALESCE($3::timestamptz, `+never+`), attempts = GREATEST(attempts, 1) - 1,
		    locked_by = NULL, locked_at = NULL, error_class = $4, last_error = $5
		WHERE id = $6`+fence,
		lease.RelayID, lease.LockedAt, holdUntil(h), store.ErrorClassHeld, store.HeldMessage(h.Behind), eventID))
	return n > 0, err
}
