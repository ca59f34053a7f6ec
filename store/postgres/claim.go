package postgres

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// bucketExpr is an aggregate's bucket (docs/design.md, section 4.1), as
// BucketOf computes it: the first byte of the SHA-256 of the UTF-8 bytes
// of aggregate_type, a zero byte and aggregate_id, modulo 64. sha256() is
// a documented function (PostgreSQL 11+, available in FIPS mode, unlike
// md5()) that Go reproduces bit for bit; hashtext() and its kin are
// internal and may change between releases. convert_to makes the bytes
// UTF-8 whatever the database's encoding, and text cannot hold the zero
// byte, so the key is built as bytea (decode, not a '\x00' literal, whose
// reading depends on standard_conforming_strings).
var bucketExpr = fmt.Sprintf(`mod(get_byte(sha256(convert_to(aggregate_type, 'UTF8') || decode('00', 'hex') || `+
	`convert_to(aggregate_id, 'UTF8')), 0), %d)`, store.BucketCount)

// readyColumns are the columns of a claimed event, in scan order.
var readyColumns = `id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, headers, fields,
       occurred_at, attempts, COALESCE(error_class, ''), ` + bucketExpr + `, next_attempt_at`

// claimQuery reads the oldest ready events, walking idx_ready in index
// order (no sort). A backoff or a hold keeps next_attempt_at in the future
// and quarantined rows sit at 'infinity', all outside the range. The ORDER
// BY names published_at, constant (NULL) in the range, so it is idx_ready's
// own order: the planner does not treat "IS NULL" as an equality that would
// let it drop the column; idx_ready ends with id (PostgreSQL's indexes,
// unlike InnoDB's, do not end with the primary key by themselves), so the
// order is total. statement_timestamp() is stable within the statement, so
// it bounds the index scan (clock_timestamp() could not). It takes no
// lock. %s takes the bucket, cursor and aggregate filters, and $1 is the
// limit.
var claimQuery = `SELECT ` + readyColumns + `
FROM outbox_events
WHERE published_at IS NULL AND next_attempt_at <= statement_timestamp()%s
ORDER BY published_at, next_attempt_at, occurred_at, id
LIMIT $1`

// BucketOf implements store.ClaimDialect, as bucketExpr computes it.
func (Dialect) BucketOf(aggregateType, aggregateID string) int {
	sum := sha256.Sum256([]byte(aggregateType + "\x00" + aggregateID))
	return int(sum[0]) % store.BucketCount
}

// ReadReady implements store.ClaimDialect.
func (Dialect) ReadReady(ctx context.Context, q store.Querier, r store.ReadyRequest) ([]store.Event, store.ReadyCursor, error) {
	query, args := ReadyQuery(r)
	return store.ScanReadyEvents(q.QueryContext(ctx, query, args...))
}

// handedOverQuery reads the oldest ready rows in the polling path's hands
// (error_class set: docs/design.md, rule T): its WHERE is
// idx_handed_over's predicate, so the scan walks that partial index, which
// a change stream's untouched rows are not in. %s and $1 as in claimQuery.
var handedOverQuery = `SELECT ` + readyColumns + `
FROM outbox_events
WHERE published_at IS NULL AND error_class IS NOT NULL AND next_attempt_at <= statement_timestamp()%s
ORDER BY next_attempt_at, occurred_at, id
LIMIT $1`

// ReadyQuery is the statement ReadReady runs for r, and its arguments:
// claimQuery; with r.HandedOver, handedOverQuery; with a watermark, both
// (docs/design.md, section 9.4): the rows in the polling path's hands, and
// the untouched rows at or after the watermark (those before it a change
// stream published), each range walking its index, merged in claim order.
// Exported for tests that EXPLAIN it.
func ReadyQuery(r store.ReadyRequest) (string, []any) {
	args := []any{r.Limit}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	filter := readyFilter(r, param)
	switch {
	case r.HandedOver:
		return fmt.Sprintf(handedOverQuery, filter), args
	case !r.Watermark.IsZero():
		fresh := " AND next_attempt_at >= " + param(r.Watermark.UTC()) + "::timestamptz AND error_class IS NULL" + filter
		return "(" + fmt.Sprintf(handedOverQuery, filter) + ")\nUNION ALL\n(" + fmt.Sprintf(claimQuery, fresh) + ")\n" +
			"ORDER BY next_attempt_at, occurred_at, id LIMIT $1", args
	}
	return fmt.Sprintf(claimQuery, filter), args
}

// readyFilter is the bucket, cursor and aggregate filters of r, their
// values bound with param.
func readyFilter(r store.ReadyRequest, param func(any) string) string {
	var filter strings.Builder
	if r.Buckets != nil {
		filter.WriteString(" AND " + bucketExpr + " = ANY(" + param(r.Buckets) + "::int[])")
	}
	if c := r.After; c != nil {
		// A row comparison is an index condition of idx_ready (and of
		// idx_handed_over): the scan starts after the cursor instead of
		// wading through the rows before it.
		fmt.Fprintf(&filter, " AND (next_attempt_at, occurred_at, id) > (%s::timestamptz, %s::timestamptz, %s::uuid)",
			param(c.NextAttemptAt.UTC()), param(c.OccurredAt.UTC()), param(c.ID))
	}
	if len(r.Exclude) > 0 {
		types, ids := make([]string, len(r.Exclude)), make([]string, len(r.Exclude))
		for i, k := range r.Exclude {
			types[i], ids[i] = k.AggregateType, k.AggregateID
		}
		fmt.Fprintf(&filter, " AND (aggregate_type, aggregate_id) NOT IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
			param(types), param(ids))
	}
	return filter.String()
}

// ReadEvents implements store.ClaimDialect.
func (Dialect) ReadEvents(ctx context.Context, q store.Querier, ids []string) ([]store.Event, error) {
	events, _, err := store.ScanReadyEvents(q.QueryContext(ctx, `SELECT `+readyColumns+` FROM outbox_events
		WHERE id = ANY($1::uuid[]) AND published_at IS NULL AND next_attempt_at <= statement_timestamp()`, ids))
	return events, err
}

// predecessorsQuery looks the keys up in uq_aggregate_seq, one probe per
// key, the keys passed as three parallel arrays (one statement text for any
// number of keys: prepared once per connection).
var predecessorsQuery = `
SELECT statement_timestamp(), e.aggregate_type, e.aggregate_id, e.aggregate_seq, e.id,
       e.published_at IS NOT NULL OR e.discarded_at IS NOT NULL, e.quarantined_at IS NOT NULL,
       ` + finiteOrNull("e.next_attempt_at") + `, ` + untouched("e") + `
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS k(aggregate_type, aggregate_id, aggregate_seq)
JOIN outbox_events e ON e.aggregate_type = k.aggregate_type AND e.aggregate_id = k.aggregate_id
  AND e.aggregate_seq = k.aggregate_seq`

// ReadPredecessors implements store.ClaimDialect.
func (Dialect) ReadPredecessors(ctx context.Context, q store.Querier, keys []store.SeqKey) (time.Time, map[store.SeqKey]store.Predecessor, error) {
	if len(keys) == 0 {
		return time.Time{}, map[store.SeqKey]store.Predecessor{}, nil
	}
	types, ids, seqs := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		types[i], ids[i], seqs[i] = k.AggregateType, k.AggregateID, int64(k.Seq)
	}
	return store.ScanPredecessors(q.QueryContext(ctx, predecessorsQuery, types, ids, seqs))
}

// Hold implements store.ClaimDialect.
func (Dialect) Hold(ctx context.Context, q store.Querier, ids []string, h store.Hold) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = COALESCE($1::timestamptz, `+never+`), error_class = $2, last_error = $3
		WHERE id = ANY($4::uuid[]) AND published_at IS NULL`,
		holdUntil(h), store.ErrorClassHeld, store.HeldMessage(h.Behind), ids)
	return err
}
