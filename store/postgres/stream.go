package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ClaimStream implements store.StreamDialect.
func (d Dialect) ClaimStream(ctx context.Context, q store.Querier, relayID string, lease time.Duration) (store.StreamLease, time.Time, error) {
	if _, err := q.ExecContext(ctx, `INSERT INTO outbox_stream (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
		return store.StreamLease{}, time.Time{}, err
	}
	if _, err := q.ExecContext(ctx, `UPDATE outbox_stream
		SET epoch = CASE WHEN leader IS NOT DISTINCT FROM $1 THEN epoch ELSE epoch + 1 END, leader = $1,
		    expires_at = `+leaseEnd("$2")+`
		WHERE id = 1 AND (leader IS NULL OR leader = $1 OR expires_at <= statement_timestamp())`,
		relayID, lease.Microseconds()); err != nil {
		return store.StreamLease{}, time.Time{}, err
	}
	return d.ReadStream(ctx, q)
}

// ReadStream implements store.StreamDialect.
func (Dialect) ReadStream(ctx context.Context, q store.Querier) (store.StreamLease, time.Time, error) {
	l, now, err := store.ScanStreamLease(q.QueryRowContext(ctx, `SELECT statement_timestamp(), leader, epoch, expires_at, position, checkpointed_at
		FROM outbox_stream WHERE id = 1`))
	if err == sql.ErrNoRows {
		err = q.QueryRowContext(ctx, "SELECT statement_timestamp()").Scan(&now)
		return l, now.UTC(), err
	}
	return l, now, err
}

// ReleaseStream implements store.StreamDialect.
func (Dialect) ReleaseStream(ctx context.Context, q store.Querier, relayID string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_stream SET leader = NULL, expires_at = NULL WHERE id = 1 AND leader = $1`, relayID)
	return err
}

// SaveCheckpoint implements store.StreamDialect. PostgreSQL counts a row
// the UPDATE matched even when nothing in it changes, so the count alone
// says whether the lease is still ours.
func (Dialect) SaveCheckpoint(ctx context.Context, q store.Querier, relayID string, epoch uint64, position string) (bool, error) {
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_stream SET position = $1, checkpointed_at = statement_timestamp()
		WHERE id = 1 AND leader = $2 AND epoch = $3`, position, relayID, epoch))
	return n > 0, err
}

// ReadStates implements store.StreamDialect.
func (Dialect) ReadStates(ctx context.Context, q store.Querier, ids []string) (map[string]store.EventState, error) {
	return store.ScanEventStates(q.QueryContext(ctx, `SELECT id, published_at IS NOT NULL,
		error_class IS NOT NULL OR quarantined_at IS NOT NULL OR discarded_at IS NOT NULL
		FROM outbox_events WHERE id = ANY($1::uuid[])`, ids))
}
