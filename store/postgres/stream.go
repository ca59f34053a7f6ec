package postgres

import (
	"context"
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

// ReadStream implements store.StreamDialect. The join reads the clock
// even before the stream's row exists.
func (Dialect) ReadStream(ctx context.Context, q store.Querier) (store.StreamLease, time.Time, error) {
	return store.ScanStreamLease(q.QueryRowContext(ctx, `SELECT statement_timestamp(), s.leader, COALESCE(s.epoch, 0),
		s.expires_at, s.position, s.checkpointed_at, s.watermark
		FROM (SELECT 1) AS one LEFT JOIN outbox_stream s ON s.id = 1`))
}

// ReleaseStream implements store.StreamDialect.
func (Dialect) ReleaseStream(ctx context.Context, q store.Querier, relayID string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_stream SET leader = NULL, expires_at = NULL WHERE id = 1 AND leader = $1`, relayID)
	return err
}

// SaveCheckpoint implements store.StreamDialect. PostgreSQL counts a row
// the UPDATE matched even when nothing in it changes, so the count alone
// says whether the lease is still ours.
func (Dialect) SaveCheckpoint(ctx context.Context, q store.Querier, relayID string, cp store.Checkpoint) (bool, error) {
	var watermark any // NULL keeps the stored one
	if !cp.Watermark.IsZero() {
		watermark = cp.Watermark.UTC()
	}
	n, err := store.RowsAffected(q.ExecContext(ctx, `UPDATE outbox_stream SET position = $1, checkpointed_at = statement_timestamp(),
		    watermark = GREATEST(watermark, $2::timestamptz)
		WHERE id = 1 AND leader = $3 AND epoch = $4`, cp.Position, watermark, relayID, cp.Epoch))
	return n > 0, err
}

// SampleWatermark implements store.StreamDialect with transaction ids, no
// privilege needed (docs/design.md, section 9.3): the clock, then a
// transaction id of the sample's own (ids are handed out in order, so
// every transaction that had one when the clock was read has a smaller
// one). The subquery is evaluated first (OFFSET 0 keeps it apart).
// pg_snapshot_xmax would not do: it is the latest completed id plus one,
// and transactions still running may hold ids above it.
func (Dialect) SampleWatermark(ctx context.Context, q store.Querier) (store.WatermarkSample, error) {
	var s store.WatermarkSample
	var wait int64
	err := q.QueryRowContext(ctx, `SELECT at, pg_current_xact_id()::text::bigint
		FROM (SELECT clock_timestamp() AS at OFFSET 0) sample`).Scan(&s.At, &wait)
	s.At, s.Wait = s.At.UTC(), uint64(wait)
	return s, err
}

// WatermarkEnded implements store.StreamDialect: every transaction with an
// id below the sample's has ended once the oldest one still running is
// above it.
func (Dialect) WatermarkEnded(ctx context.Context, q store.Querier, s store.WatermarkSample) (bool, error) {
	var ended bool
	err := q.QueryRowContext(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint > $1`, int64(s.Wait)).Scan(&ended)
	return ended, err
}

// ReadStates implements store.StreamDialect.
func (Dialect) ReadStates(ctx context.Context, q store.Querier, ids []string) (map[string]store.EventState, error) {
	return store.ScanEventStates(q.QueryContext(ctx, `SELECT id, published_at IS NOT NULL,
		error_class IS NOT NULL OR quarantined_at IS NOT NULL OR discarded_at IS NOT NULL
		FROM outbox_events WHERE id = ANY($1::uuid[])`, ids))
}
