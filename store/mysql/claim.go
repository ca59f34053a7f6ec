package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ClaimQuery reads the claim's candidates, walking idx_ready in index order
// (no filesort): the ready rows, oldest first. A live lease, a backoff or a
// hold keeps next_attempt_at in the future and quarantined rows sit at
// never, all outside the range. It takes no lock. Exported for tests that
// EXPLAIN it.
const ClaimQuery = `
SELECT id, aggregate_type, aggregate_id, aggregate_seq
FROM outbox_events FORCE INDEX (idx_ready)
WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)
ORDER BY next_attempt_at, occurred_at
LIMIT ?`

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

// ReadPredecessors implements store.ClaimDialect with one lookup of
// uq_aggregate_seq per key.
func (Dialect) ReadPredecessors(ctx context.Context, q store.Querier, keys []store.SeqKey) (time.Time, map[store.SeqKey]store.Predecessor, error) {
	found := make(map[store.SeqKey]store.Predecessor, len(keys))
	var now time.Time
	if len(keys) == 0 {
		return now, found, nil
	}
	var b strings.Builder
	b.WriteString(`SELECT UTC_TIMESTAMP(6), aggregate_type, aggregate_id, aggregate_seq, id,
		published_at IS NOT NULL OR discarded_at IS NOT NULL, quarantined_at IS NOT NULL,
		locked_by IS NOT NULL AND next_attempt_at > UTC_TIMESTAMP(6), next_attempt_at
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
	rows, err := q.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return now, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k store.SeqKey
		var p store.Predecessor
		if err := rows.Scan(&now, &k.AggregateType, &k.AggregateID, &k.Seq, &p.ID, &p.Done, &p.Quarantined,
			&p.Leased, &p.NextAttempt); err != nil {
			return now, nil, err
		}
		p.Forever = !p.NextAttempt.Before(never)
		found[k] = p
	}
	return now, found, rows.Err() // now is zero when none was found: no fate then depends on it
}

// lockQuery locks chosen candidates that are still ready, skipping rows a
// concurrent claim holds; %s is the id placeholders.
const lockQuery = `
SELECT UTC_TIMESTAMP(6), id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
       payload, headers, occurred_at, attempts, COALESCE(error_class, ''), locked_by IS NOT NULL
FROM outbox_events
WHERE id IN (%s) AND published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)
FOR UPDATE SKIP LOCKED`

// LockReady implements store.ClaimDialect.
func (Dialect) LockReady(ctx context.Context, q store.Querier, ids []string) (time.Time, []store.LockedEvent, error) {
	var now time.Time
	rows, err := q.QueryContext(ctx, fmt.Sprintf(lockQuery, placeholders(len(ids))), anySlice(ids)...)
	if err != nil {
		return now, nil, err
	}
	defer rows.Close()
	var locked []store.LockedEvent
	for rows.Next() {
		var (
			l       store.LockedEvent
			e       = &l.Event
			headers sql.NullString
		)
		if err := rows.Scan(&now, &e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq, &e.EventType,
			&e.SchemaVersion, &e.Payload, &headers, &e.OccurredAt, &e.Attempts, &e.PreviousErrorClass, &l.Stolen); err != nil {
			return now, nil, err
		}
		if headers.Valid {
			if err := json.Unmarshal([]byte(headers.String), &e.Headers); err != nil {
				return now, nil, fmt.Errorf("event %s: headers are not a JSON object: %w", e.ID, err)
			}
		}
		locked = append(locked, l)
	}
	return now, locked, rows.Err()
}

// Lease implements store.ClaimDialect.
func (Dialect) Lease(ctx context.Context, q store.Querier, ids []string, lease store.Lease) error {
	args := append([]any{lease.RelayID, datetime(lease.LockedAt), datetime(lease.Expires)}, anySlice(ids)...)
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET locked_by = ?, locked_at = ?, next_attempt_at = ?, attempts = attempts + 1
		WHERE id IN (`+placeholders(len(ids))+`)`, args...)
	return err
}

// Hold implements store.ClaimDialect.
func (Dialect) Hold(ctx context.Context, q store.Querier, ids []string, h store.Hold) error {
	args := append([]any{holdUntil(h), store.ErrorClassHeld, store.HeldMessage(h.Behind)}, anySlice(ids)...)
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = ?, locked_by = NULL, locked_at = NULL, error_class = ?, last_error = ?
		WHERE id IN (`+placeholders(len(ids))+`)`, args...)
	return err
}
