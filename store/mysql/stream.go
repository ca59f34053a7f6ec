package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ClaimStream implements store.StreamDialect.
func (d Dialect) ClaimStream(ctx context.Context, q store.Querier, relayID string, lease time.Duration) (store.StreamLease, time.Time, error) {
	if _, err := q.ExecContext(ctx, `INSERT IGNORE INTO outbox_stream (id, epoch) VALUES (1, 0)`); err != nil {
		return store.StreamLease{}, time.Time{}, err
	}
	if _, err := q.ExecContext(ctx, `UPDATE outbox_stream
		SET epoch = IF(leader <=> ?, epoch, epoch + 1), leader = ?,
		    expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
		WHERE id = 1 AND (leader IS NULL OR leader = ? OR expires_at <= UTC_TIMESTAMP(6))`,
		relayID, relayID, lease.Microseconds(), relayID); err != nil {
		return store.StreamLease{}, time.Time{}, err
	}
	return d.ReadStream(ctx, q)
}

// ReadStream implements store.StreamDialect.
func (Dialect) ReadStream(ctx context.Context, q store.Querier) (store.StreamLease, time.Time, error) {
	l, now, err := store.ScanStreamLease(q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6), leader, epoch, expires_at, position, checkpointed_at
		FROM outbox_stream WHERE id = 1`))
	if err == sql.ErrNoRows {
		err = q.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now)
		return l, now.UTC(), err
	}
	return l, now, err
}

// ReleaseStream implements store.StreamDialect.
func (Dialect) ReleaseStream(ctx context.Context, q store.Querier, relayID string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_stream SET leader = NULL, expires_at = NULL WHERE id = 1 AND leader = ?`, relayID)
	return err
}

// SaveCheckpoint implements store.StreamDialect.
func (Dialect) SaveCheckpoint(ctx context.Context, q store.Querier, relayID string, epoch uint64, position string) (bool, error) {
	n, err := affected(q.ExecContext(ctx, `UPDATE outbox_stream SET position = ?, checkpointed_at = UTC_TIMESTAMP(6)
		WHERE id = 1 AND leader = ? AND epoch = ?`, position, relayID, epoch))
	if err != nil || n > 0 {
		return n > 0, err
	}
	// Zero rows changed also when the position is the same one: it is
	// still ours if the lease is.
	var held int
	err = q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_stream WHERE id = 1 AND leader = ? AND epoch = ?`,
		relayID, epoch).Scan(&held)
	return held > 0, err
}

// ReadStates implements store.StreamDialect.
func (Dialect) ReadStates(ctx context.Context, q store.Querier, ids []string) (map[string]store.EventState, error) {
	return store.ScanEventStates(q.QueryContext(ctx, `SELECT id, published_at IS NOT NULL,
		error_class IS NOT NULL OR quarantined_at IS NOT NULL OR discarded_at IS NOT NULL
		FROM outbox_events WHERE id IN (`+placeholders(len(ids))+`)`, anySlice(ids)...))
}
