package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ClaimQuery reads the claim's candidates, walking idx_ready in index order
// (no sort): the ready rows, oldest first. A live lease, a backoff or a hold
// keeps next_attempt_at in the future and quarantined rows sit at
// 'infinity', all outside the range. The ORDER BY names published_at,
// constant (NULL) in the range, so it is idx_ready's own order: the planner
// does not treat "IS NULL" as an equality that would let it drop the column.
// statement_timestamp() is stable within the statement, so it bounds the
// index scan (clock_timestamp() could not). It takes no lock. Exported for
// tests that EXPLAIN it.
const ClaimQuery = `
SELECT id, aggregate_type, aggregate_id, aggregate_seq
FROM outbox_events
WHERE published_at IS NULL AND next_attempt_at <= statement_timestamp()
ORDER BY published_at, next_attempt_at, occurred_at
LIMIT $1`

// ReadCandidates implements store.ClaimDialect.
func (Dialect) ReadCandidates(ctx context.Context, q store.Querier, limit int) ([]store.Candidate, error) {
	rows, err := q.QueryContext(ctx, ClaimQuery, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cands []store.Candidate
	for rows.Next() {
		var c store.Candidate
		if err := rows.Scan(&c.ID, &c.Key.AggregateType, &c.Key.AggregateID, &c.Key.Seq); err != nil {
			return nil, err
		}
		cands = append(cands, c)
	}
	return cands, rows.Err()
}

// predecessorsQuery looks the keys up in uq_aggregate_seq, one probe per
// key, the keys passed as three parallel arrays (one statement text for any
// number of keys: prepared once per connection).
var predecessorsQuery = `
SELECT statement_timestamp(), e.aggregate_type, e.aggregate_id, e.aggregate_seq, e.id,
       e.published_at IS NOT NULL OR e.discarded_at IS NOT NULL, e.quarantined_at IS NOT NULL,
       e.locked_by IS NOT NULL AND e.next_attempt_at > statement_timestamp(),
       ` + finiteOrNull("e.next_attempt_at") + `
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS k(aggregate_type, aggregate_id, aggregate_seq)
JOIN outbox_events e ON e.aggregate_type = k.aggregate_type AND e.aggregate_id = k.aggregate_id
  AND e.aggregate_seq = k.aggregate_seq`

// ReadPredecessors implements store.ClaimDialect.
func (Dialect) ReadPredecessors(ctx context.Context, q store.Querier, keys []store.SeqKey) (time.Time, map[store.SeqKey]store.Predecessor, error) {
	found := make(map[store.SeqKey]store.Predecessor, len(keys))
	var now time.Time
	if len(keys) == 0 {
		return now, found, nil
	}
	types, ids, seqs := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		types[i], ids[i], seqs[i] = k.AggregateType, k.AggregateID, int64(k.Seq)
	}
	rows, err := q.QueryContext(ctx, predecessorsQuery, types, ids, seqs)
	if err != nil {
		return now, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k    store.SeqKey
			p    store.Predecessor
			next sql.NullTime
		)
		if err := rows.Scan(&now, &k.AggregateType, &k.AggregateID, &k.Seq, &p.ID, &p.Done, &p.Quarantined,
			&p.Leased, &next); err != nil {
			return now, nil, err
		}
		p.Forever, p.NextAttempt = !next.Valid, next.Time.UTC()
		found[k] = p
	}
	return now.UTC(), found, rows.Err() // now is zero when none was found: no fate then depends on it
}

// lockQuery locks chosen candidates that are still ready, skipping rows a
// concurrent claim holds. At READ COMMITTED a row updated since the
// statement's snapshot is judged by its newest version, so a row another
// claim just leased (next_attempt_at in the future) is not returned.
const lockQuery = `
SELECT statement_timestamp(), id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
       payload, headers, occurred_at, attempts, COALESCE(error_class, ''), locked_by IS NOT NULL
FROM outbox_events
WHERE id = ANY($1::uuid[]) AND published_at IS NULL AND next_attempt_at <= statement_timestamp()
FOR UPDATE SKIP LOCKED`

// LockReady implements store.ClaimDialect.
func (Dialect) LockReady(ctx context.Context, q store.Querier, ids []string) (time.Time, []store.LockedEvent, error) {
	var now time.Time
	rows, err := q.QueryContext(ctx, lockQuery, ids)
	if err != nil {
		return now, nil, err
	}
	defer rows.Close()
	var locked []store.LockedEvent
	for rows.Next() {
		var (
			l       store.LockedEvent
			e       = &l.Event
			headers []byte
		)
		if err := rows.Scan(&now, &e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq, &e.EventType,
			&e.SchemaVersion, &e.Payload, &headers, &e.OccurredAt, &e.Attempts, &e.PreviousErrorClass, &l.Stolen); err != nil {
			return now, nil, err
		}
		e.OccurredAt = e.OccurredAt.UTC()
		if headers != nil {
			if err := json.Unmarshal(headers, &e.Headers); err != nil {
				return now, nil, fmt.Errorf("event %s: headers are not a JSON object: %w", e.ID, err)
			}
		}
		locked = append(locked, l)
	}
	return now.UTC(), locked, rows.Err()
}

// Lease implements store.ClaimDialect.
func (Dialect) Lease(ctx context.Context, q store.Querier, ids []string, lease store.Lease) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET locked_by = $1, locked_at = $2, next_attempt_at = $3, attempts = attempts + 1
		WHERE id = ANY($4::uuid[])`, lease.RelayID, lease.LockedAt, lease.Expires, ids)
	return err
}

// Hold implements store.ClaimDialect.
func (Dialect) Hold(ctx context.Context, q store.Querier, ids []string, h store.Hold) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = COALESCE($1::timestamptz, `+never+`), locked_by = NULL, locked_at = NULL,
		    error_class = $2, last_error = $3
		WHERE id = ANY($4::uuid[])`, holdUntil(h), store.ErrorClassHeld, store.HeldMessage(h.Behind), ids)
	return err
}
