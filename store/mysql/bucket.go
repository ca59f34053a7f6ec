package mysql

import (
	"context"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// membersForgottenAfter is how long after its lease ended a relay's
// membership row is deleted.
const membersForgottenAfter = time.Hour

// Heartbeat implements store.BucketDialect.
func (Dialect) Heartbeat(ctx context.Context, q store.Querier, relayID string, lease time.Duration) ([]string, error) {
	if _, err := q.ExecContext(ctx, `INSERT INTO outbox_relays (relay_id, started_at, expires_at)
		VALUES (?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
		ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)`, relayID, lease.Microseconds()); err != nil {
		return nil, err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM outbox_relays WHERE expires_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND`,
		membersForgottenAfter.Microseconds()); err != nil {
		return nil, err
	}
	return store.ScanStrings(q.QueryContext(ctx,
		`SELECT relay_id FROM outbox_relays WHERE expires_at > UTC_TIMESTAMP(6) ORDER BY relay_id`))
}

// Leave implements store.BucketDialect.
func (Dialect) Leave(ctx context.Context, q store.Querier, relayID string) error {
	if _, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET owner = NULL, expires_at = NULL WHERE owner = ?`, relayID); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `DELETE FROM outbox_relays WHERE relay_id = ?`, relayID)
	return err
}

// CreateBuckets implements store.BucketDialect.
func (Dialect) CreateBuckets(ctx context.Context, q store.Querier, n int) error {
	var b strings.Builder
	args := make([]any, n)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, 0)")
		args[i] = i
	}
	_, err := q.ExecContext(ctx, `INSERT IGNORE INTO outbox_buckets (bucket, epoch) VALUES `+b.String(), args...)
	return err
}

// ReadBuckets implements store.BucketDialect.
func (Dialect) ReadBuckets(ctx context.Context, q store.Querier) (time.Time, []store.BucketLease, error) {
	var now time.Time
	if err := q.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now); err != nil {
		return now, nil, err
	}
	leases, err := store.ScanBucketLeases(q.QueryContext(ctx,
		`SELECT bucket, COALESCE(owner, ''), epoch, expires_at FROM outbox_buckets ORDER BY bucket`))
	return now, leases, err
}

// AcquireBuckets implements store.BucketDialect.
func (Dialect) AcquireBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int, lease time.Duration) error {
	args := append([]any{relayID, lease.Microseconds()}, ints(buckets)...)
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets
		SET owner = ?, epoch = epoch + 1, expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
		WHERE bucket IN (`+placeholders(len(buckets))+`) AND (owner IS NULL OR expires_at <= UTC_TIMESTAMP(6))`, args...)
	return err
}

// RenewBuckets implements store.BucketDialect.
func (Dialect) RenewBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int, lease time.Duration) error {
	args := append([]any{lease.Microseconds(), relayID}, ints(buckets)...)
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
		WHERE owner = ? AND bucket IN (`+placeholders(len(buckets))+`)`, args...)
	return err
}

// ReleaseBuckets implements store.BucketDialect.
func (Dialect) ReleaseBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int) error {
	args := append([]any{relayID}, ints(buckets)...)
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET owner = NULL, expires_at = NULL
		WHERE owner = ? AND bucket IN (`+placeholders(len(buckets))+`)`, args...)
	return err
}

// LockBuckets implements store.BucketDialect.
func (Dialect) LockBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int) (map[int]uint64, error) {
	args := append([]any{relayID}, ints(buckets)...)
	return store.ScanEpochs(q.QueryContext(ctx, `SELECT bucket, epoch FROM outbox_buckets
		WHERE owner = ? AND bucket IN (`+placeholders(len(buckets))+`) LOCK IN SHARE MODE`, args...))
}

func ints(xs []int) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
