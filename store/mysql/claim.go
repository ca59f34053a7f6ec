package mysql

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// BucketExpr is an aggregate's bucket (docs/design.md, section 4.1), as
// BucketOf computes it. Exported for tests that EXPLAIN ClaimQuery.
var BucketExpr = fmt.Sprintf("MOD(CRC32(CONCAT(aggregate_type, 0x00, aggregate_id)), %d)", store.BucketCount)

// readyColumns are the columns of a claimed event, in scan order.
var readyColumns = `id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, headers, fields,
	occurred_at, attempts, COALESCE(error_class, ''), ` + BucketExpr + `, next_attempt_at`

// ClaimQuery reads the oldest ready events, walking idx_ready in index order
// (no filesort). A backoff or a hold keeps next_attempt_at in the future and
// quarantined rows sit at never, all outside the range. %s takes the
// bucket, cursor and aggregate filters. Exported for tests that EXPLAIN it.
var ClaimQuery = `SELECT ` + readyColumns + `
FROM outbox_events FORCE INDEX (idx_ready)
WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)%s
ORDER BY next_attempt_at, occurred_at, id
LIMIT ?`

// handedOverQuery reads the oldest ready rows in the polling path's hands
// (error_class set: docs/design.md, rule T) through idx_handed_over, whose
// key is next_attempt_at for exactly those rows: a change stream's
// untouched rows are not in it. %s as in ClaimQuery, the cursor on
// handed_over_at.
var handedOverQuery = `SELECT ` + readyColumns + `
FROM outbox_events FORCE INDEX (idx_handed_over)
WHERE handed_over_at <= UTC_TIMESTAMP(6)%s
ORDER BY handed_over_at, occurred_at, id
LIMIT ?`

// BucketOf implements store.ClaimDialect: MariaDB's and MySQL's CRC32 is
// the IEEE polynomial's, over the UTF-8 bytes BucketExpr concatenates.
func (Dialect) BucketOf(aggregateType, aggregateID string) int {
	return int(crc32.ChecksumIEEE([]byte(aggregateType+"\x00"+aggregateID)) % store.BucketCount)
}

// ReadReady implements store.ClaimDialect.
func (Dialect) ReadReady(ctx context.Context, q store.Querier, r store.ReadyRequest) ([]store.Event, store.ReadyCursor, error) {
	query, args := ReadyQuery(r)
	return store.ScanReadyEvents(q.QueryContext(ctx, query, args...))
}

// ReadyQuery is the statement ReadReady runs for r, and its arguments:
// ClaimQuery; with r.HandedOver, handedOverQuery; with a watermark, both
// (docs/design.md, section 9.4): the rows in the polling path's hands, and
// the untouched rows at or after the watermark (those before it a change
// stream published), each range walking its index, merged in claim order.
// Exported for tests that EXPLAIN it.
func ReadyQuery(r store.ReadyRequest) (string, []any) {
	switch {
	case r.HandedOver:
		filter, args := readyFilter(r, "handed_over_at")
		return fmt.Sprintf(handedOverQuery, filter), append(args, r.Limit)
	case !r.Watermark.IsZero():
		touched, args := readyFilter(r, "handed_over_at")
		fresh, freshArgs := readyFilter(r, "next_attempt_at")
		args = append(args, r.Limit, datetime(r.Watermark))
		args = append(append(args, freshArgs...), r.Limit, r.Limit)
		return "(" + fmt.Sprintf(handedOverQuery, touched) + ")\nUNION ALL\n(" +
			fmt.Sprintf(ClaimQuery, " AND next_attempt_at >= ? AND error_class IS NULL"+fresh) + ")\n" +
			"ORDER BY next_attempt_at, occurred_at, id LIMIT ?", args
	}
	filter, args := readyFilter(r, "next_attempt_at")
	return fmt.Sprintf(ClaimQuery, filter), append(args, r.Limit)
}

// readyFilter is the bucket, cursor and aggregate filters of r, the cursor
// on the index's time column at.
func readyFilter(r store.ReadyRequest, at string) (string, []any) {
	var filter strings.Builder
	var args []any
	if r.Buckets != nil {
		filter.WriteString(" AND " + BucketExpr + " IN (" + placeholders(len(r.Buckets)) + ")")
		for _, b := range r.Buckets {
			args = append(args, b)
		}
	}
	if c := r.After; c != nil {
		// After (next_attempt_at, occurred_at, id), spelled out so the
		// range stays on the index (whose entries end with the id).
		fmt.Fprintf(&filter, ` AND (%[1]s > ? OR (%[1]s = ? AND (occurred_at > ? OR (occurred_at = ? AND id > ?))))`, at)
		next, occurred := datetime(c.NextAttemptAt), datetime(c.OccurredAt)
		args = append(args, next, next, occurred, occurred, c.ID)
	}
	if len(r.Exclude) > 0 {
		filter.WriteString(" AND (aggregate_type, aggregate_id) NOT IN (")
		for i, k := range r.Exclude {
			if i > 0 {
				filter.WriteString(", ")
			}
			filter.WriteString("(?, ?)")
			args = append(args, k.AggregateType, k.AggregateID)
		}
		filter.WriteString(")")
	}
	return filter.String(), args
}

// ReadEvents implements store.ClaimDialect.
func (Dialect) ReadEvents(ctx context.Context, q store.Querier, ids []string) ([]store.Event, error) {
	events, _, err := store.ScanReadyEvents(q.QueryContext(ctx, `SELECT `+readyColumns+` FROM outbox_events
		WHERE id IN (`+placeholders(len(ids))+`) AND published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)`,
		anySlice(ids)...))
	return events, err
}

// ReadPredecessors implements store.ClaimDialect with one lookup of
// uq_aggregate_seq per key.
func (Dialect) ReadPredecessors(ctx context.Context, q store.Querier, keys []store.SeqKey) (time.Time, map[store.SeqKey]store.Predecessor, error) {
	if len(keys) == 0 {
		return time.Time{}, map[store.SeqKey]store.Predecessor{}, nil
	}
	var b strings.Builder
	b.WriteString(`SELECT UTC_TIMESTAMP(6), aggregate_type, aggregate_id, aggregate_seq, id,
		published_at IS NOT NULL OR discarded_at IS NOT NULL, quarantined_at IS NOT NULL,
		` + finiteOrNull("next_attempt_at") + `, ` + untouched + `
		FROM outbox_events WHERE (aggregate_type, aggregate_id, aggregate_seq) IN (`)
	args := make([]any, 0, 3*len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?)")
		args = append(args, k.AggregateType, k.AggregateID, k.Seq)
	}
	b.WriteString(")")
	return store.ScanPredecessors(q.QueryContext(ctx, b.String(), args...))
}

// Hold implements store.ClaimDialect.
func (Dialect) Hold(ctx context.Context, q store.Querier, ids []string, h store.Hold) error {
	args := append([]any{holdUntil(h), store.ErrorClassHeld, store.HeldMessage(h.Behind)}, anySlice(ids)...)
	_, err := q.ExecContext(ctx, updateEvents+` SET next_attempt_at = ?, error_class = ?, last_error = ?
		WHERE id IN (`+placeholders(len(ids))+`) AND published_at IS NULL`, args...)
	return err
}
