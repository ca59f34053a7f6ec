package postgres

import (
	"context"
	"time"

	"github.com/herald-outbox/herald/store"
)

// membersForgottenAfter is how long after its lease ended a relay's
// membership row is deleted.
const membersForgottenAfter = time.Hour

// leaseEnd is now + $n microseconds: the end of a lease, on the database
// clock.
func leaseEnd(n string) string {
	return "statement_timestamp() + " + n + " * interval '1 microsecond'"
}

// Heartbeat implements store.BucketDialect.
func (Dialect) Heartbeat(ctx context.Context, q store.Querier, relayID string, lease time.Duration) ([]string, error) {
	if _, err := q.ExecContext(ctx, `INSERT INTO outbox_relays (relay_id, started_at, expires_at)
		VALUES ($1, statement_timestamp(), `+leaseEnd("$2")+`)
		ON CONFLICT (relay_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`, relayID, lease.Microseconds()); err != nil {
		return nil, err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM outbox_relays
		WHERE expires_at < statement_timestamp() - $1 * interval '1 microsecond'`, membersForgottenAfter.Microseconds()); err != nil {
		return nil, err
	}
	return store.ScanStrings(q.QueryContext(ctx,
		`SELECT relay_id FROM outbox_relays WHERE expires_at > statement_timestamp() ORDER BY relay_id`))
}

// Leave implements store.BucketDialect.
func (Dialect) Leave(ctx context.Context, q store.Querier, relayID string) error {
	if _, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET owner = NULL, expires_at = NULL WHERE owner = $1`, relayID); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `DELETE FROM outbox_relays WHERE relay_id = $1`, relayID)
	return err
}

// CreateBuckets implements store.BucketDialect.
func (Dialect) CreateBuckets(ctx context.Context, q store.Querier, n int) error {
	_, err := q.ExecContext(ctx, `INSERT INTO outbox_buckets (bucket, epoch)
		SELECT b, 0 FROM generate_series(0, $1::int - 1) AS b
		ON CONFLICT (bucket) DO NOTHING`, n)
	return err
}

// ReadBuckets implements store.BucketDialect.
func (Dialect) ReadBuckets(ctx context.Context, q store.Querier) (time.Time, []store.BucketLease, error) {
	var now time.Time
	if err := q.QueryRowContext(ctx, "SELECT statement_timestamp()").Scan(&now); err != nil {
		return now, nil, err
	}
	leases, err := store.ScanBucketLeases(q.QueryContext(ctx,
		`SELECT bucket, COALESCE(owner, ''), epoch, expires_at FROM outbox_buckets ORDER BY bucket`))
	return now.UTC(), leases, err
}

// AcquireBuckets implements store.BucketDialect. At READ COMMITTED an
// acquire that waited for another relay's acquire (or a settle's share
// lock) re-checks its condition on the row's newest version, so of two
// relays racing for a bucket only one gets it (docs/design.md, C1).
func (Dialect) AcquireBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int, lease time.Duration) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets
		SET owner = $1, epoch = epoch + 1, expires_at = `+leaseEnd("$2")+`
		WHERE bucket = ANY($3::int[]) AND (owner IS NULL OR expires_at <= statement_timestamp())`,
		relayID, lease.Microseconds(), buckets)
	return err
}

// RenewBuckets implements store.BucketDialect.
func (Dialect) RenewBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int, lease time.Duration) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET expires_at = `+leaseEnd("$1")+`
		WHERE owner = $2 AND bucket = ANY($3::int[])`, lease.Microseconds(), relayID, buckets)
	return err
}

// ReleaseBuckets implements store.BucketDialect.
func (Dialect) ReleaseBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_buckets SET owner = NULL, expires_at = NULL
		WHERE owner = $1 AND bucket = ANY($2::int[])`, relayID, buckets)
	return err
}

// LockBuckets implements store.BucketDialect with FOR SHARE, not FOR KEY
// SHARE: an acquire's UPDATE changes no key column, so it takes only a FOR
// NO KEY UPDATE lock, which conflicts with FOR SHARE and not with FOR KEY
// SHARE. A takeover then waits for the settle, and a settle that waited
// for a takeover re-checks owner on the row's newest version (READ
// COMMITTED) and no longer returns the bucket.
func (Dialect) LockBuckets(ctx context.Context, q store.Querier, relayID string, buckets []int) (map[int]uint64, error) {
	return store.ScanEpochs(q.QueryContext(ctx, `SELECT bucket, epoch FROM outbox_buckets
		WHERE owner = $1 AND bucket = ANY($2::int[]) FOR SHARE`, relayID, buckets))
}
