package mysql

import (
	"context"
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

// ReadStream implements store.StreamDialect. The join reads the clock
// even before the stream's row exists.
func (Dialect) ReadStream(ctx context.Context, q store.Querier) (store.StreamLease, time.Time, error) {
	return store.ScanStreamLease(q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6), s.leader, COALESCE(s.epoch, 0),
		s.expires_at, s.position, s.checkpointed_at, s.watermark
		FROM (SELECT 1) AS one LEFT JOIN outbox_stream s ON s.id = 1`))
}

// ReleaseStream implements store.StreamDialect.
func (Dialect) ReleaseStream(ctx context.Context, q store.Querier, relayID string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_stream SET leader = NULL, expires_at = NULL WHERE id = 1 AND leader = ?`, relayID)
	return err
}

// SaveCheckpoint implements store.StreamDialect.
func (Dialect) SaveCheckpoint(ctx context.Context, q store.Querier, relayID string, cp store.Checkpoint) (bool, error) {
	var watermark any // NULL keeps the stored one
	if !cp.Watermark.IsZero() {
		watermark = datetime(cp.Watermark)
	}
	n, err := store.RowsAffected(q.ExecContext(ctx, `UPDATE outbox_stream SET position = ?, checkpointed_at = UTC_TIMESTAMP(6),
		    watermark = GREATEST(COALESCE(watermark, ?), COALESCE(?, watermark))
		WHERE id = 1 AND leader = ? AND epoch = ?`, cp.Position, watermark, watermark, relayID, cp.Epoch))
	if err != nil || n > 0 {
		return n > 0, err
	}
	// Zero rows changed also when the position is the same one: it is
	// still ours if the lease is.
	var held int
	err = q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_stream WHERE id = 1 AND leader = ? AND epoch = ?`,
		relayID, cp.Epoch).Scan(&held)
	return held > 0, err
}

// SampleWatermark implements store.StreamDialect: the start of the oldest
// open InnoDB transaction, or now (docs/design.md, section 9.3). It needs
// the PROCESS privilege (innodb_trx shows other sessions' transactions only
// with it). trx_started has whole seconds in the server's system time
// zone, so the age is measured on that zone's clock and rounded up by the
// truncation: the sample is at or before the true start, and a second
// before that.
func (Dialect) SampleWatermark(ctx context.Context, q store.Querier) (store.WatermarkSample, error) {
	var at time.Time
	err := q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6) - INTERVAL COALESCE(
		  (SELECT MAX(TIMESTAMPDIFF(MICROSECOND, trx_started, CONVERT_TZ(UTC_TIMESTAMP(6), '+00:00', 'SYSTEM')))
		   FROM information_schema.innodb_trx), 0) MICROSECOND - INTERVAL 1 SECOND`).Scan(&at)
	return store.WatermarkSample{At: at.UTC()}, err
}

// WatermarkEnded implements store.StreamDialect: a MySQL sample needs no
// wait.
func (Dialect) WatermarkEnded(context.Context, store.Querier, store.WatermarkSample) (bool, error) {
	return true, nil
}

// ReadStates implements store.StreamDialect.
func (Dialect) ReadStates(ctx context.Context, q store.Querier, ids []string) (map[string]store.EventState, error) {
	return store.ScanEventStates(q.QueryContext(ctx, `SELECT id, published_at IS NOT NULL,
		error_class IS NOT NULL OR quarantined_at IS NOT NULL OR discarded_at IS NOT NULL
		FROM outbox_events WHERE id IN (`+placeholders(len(ids))+`)`, anySlice(ids)...))
}
