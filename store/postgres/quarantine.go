package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
)

// waitingBehindWhere selects the unpublished events after ($1, $2, $3) in
// their aggregate, not quarantined or discarded themselves: the events that
// wait for it.
const waitingBehindWhere = `aggregate_type = $1 AND aggregate_id = $2 AND aggregate_seq > $3
	AND published_at IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL`

// heldBehindWhere narrows waitingBehindWhere to the events held behind it;
// $4 is the held error class.
const heldBehindWhere = waitingBehindWhere + ` AND error_class = $4`

func heldBehindArgs(k store.SeqKey) []any {
	return []any{k.AggregateType, k.AggregateID, int64(k.Seq), store.ErrorClassHeld}
}

// ListQuarantined implements store.OperationsDialect. Quarantined rows sit
// at next_attempt_at = 'infinity': the idx_ready range finds them without
// scanning the table.
func (Dialect) ListQuarantined(ctx context.Context, q store.Querier, f store.QuarantineFilter) ([]store.QuarantinedEvent, error) {
	where := []string{"e.quarantined_at IS NOT NULL", "e.discarded_at IS NULL"}
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1))
	}
	for _, m := range f.Matches() {
		add("e."+m.Column+" = ?", m.Value)
	}
	if !f.Since.IsZero() {
		add("e.quarantined_at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("e.quarantined_at < ?", f.Until.UTC())
	}
	if a := f.After; a != nil {
		args = append(args, a.QuarantinedAt, a.ID)
		where = append(where, fmt.Sprintf("(e.quarantined_at, e.id) > ($%d, $%d::uuid)", len(args)-1, len(args)))
	}
	args = append(args, f.Limit)
	return store.ScanQuarantined(q.QueryContext(ctx, `
		SELECT e.id, e.aggregate_type, e.aggregate_id, e.aggregate_seq, e.event_type, e.attempts,
		       COALESCE(e.error_class, ''), COALESCE(e.last_error, ''), e.occurred_at, e.quarantined_at,
		       (SELECT count(*) FROM outbox_events h -- waitingBehindWhere, correlated
		         WHERE h.aggregate_type = e.aggregate_type AND h.aggregate_id = e.aggregate_id
		           AND h.aggregate_seq > e.aggregate_seq AND h.published_at IS NULL
		           AND h.quarantined_at IS NULL AND h.discarded_at IS NULL)
		FROM outbox_events e
		WHERE e.published_at IS NULL AND e.next_attempt_at = `+never+` AND `+strings.Join(where, " AND ")+`
		ORDER BY e.quarantined_at, e.id LIMIT $`+strconv.Itoa(len(args)), args...))
}

// ReadEvent implements store.OperationsDialect.
func (Dialect) ReadEvent(ctx context.Context, q store.Querier, id string, lock bool) (store.EventRow, error) {
	if _, err := uuid.Parse(id); err != nil {
		return store.EventRow{}, store.ErrEventNotFound // not even a UUID: no event has it
	}
	query := `SELECT ` + eventRowColumns + `, payload, headers FROM outbox_events WHERE id = $1`
	if lock {
		query += " FOR UPDATE"
	}
	return store.ScanEventRow(q.QueryRowContext(ctx, query, id))
}

// ReadFailures implements store.OperationsDialect.
func (Dialect) ReadFailures(ctx context.Context, q store.Querier, id string) ([]store.FailureRecord, error) {
	return store.ScanFailures(q.QueryContext(ctx, `SELECT failed_at, relay_id, attempt, error_class, error, quarantined
		FROM outbox_failures WHERE event_id = $1 ORDER BY id`, id))
}

// ReadAudit implements store.OperationsDialect.
func (Dialect) ReadAudit(ctx context.Context, q store.Querier, id string) ([]store.AuditRecord, error) {
	return store.ScanAudit(q.QueryContext(ctx, `SELECT at, actor, action, COALESCE(event_id::text, ''), COALESCE(reason, ''), details
		FROM outbox_audit WHERE event_id = $1 ORDER BY id`, id))
}

// CountBehind implements store.OperationsDialect.
func (Dialect) CountBehind(ctx context.Context, q store.Querier, k store.SeqKey, heldOnly bool) (int, error) {
	query, args := waitingBehindWhere, heldBehindArgs(k)[:3]
	if heldOnly {
		query, args = heldBehindWhere, heldBehindArgs(k)
	}
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox_events WHERE `+query, args...).Scan(&n)
	return n, err
}

// ReleaseHeldBehind implements store.OperationsDialect. The rows stay
// in the polling path's hands (docs/design.md, rule T).
func (Dialect) ReleaseHeldBehind(ctx context.Context, q store.Querier, k store.SeqKey) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events
		SET next_attempt_at = statement_timestamp(), error_class = '`+store.ErrorClassReleased+`', last_error = NULL
		WHERE `+heldBehindWhere, heldBehindArgs(k)...)
	return err
}

// Requeue implements store.OperationsDialect. The row stays in the
// polling path's hands (docs/design.md, rule T).
func (Dialect) Requeue(ctx context.Context, q store.Querier, id string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events SET quarantined_at = NULL, next_attempt_at = statement_timestamp(),
		attempts = 0, error_class = '`+store.ErrorClassReleased+`', last_error = NULL WHERE id = $1`, id)
	return err
}

// Discard implements store.OperationsDialect.
func (Dialect) Discard(ctx context.Context, q store.Querier, id string) error {
	_, err := q.ExecContext(ctx, `UPDATE outbox_events SET discarded_at = statement_timestamp() WHERE id = $1`, id)
	return err
}

// AppendAudit implements store.OperationsDialect.
func (Dialect) AppendAudit(ctx context.Context, q store.Querier, a store.AuditRecord) error {
	var eventID any // NULL: an action on no event (a uuid column takes no '')
	if a.EventID != "" {
		eventID = a.EventID
	}
	_, err := q.ExecContext(ctx, `INSERT INTO outbox_audit (at, actor, action, event_id, reason, details)
		VALUES (statement_timestamp(), $1, $2, $3, NULLIF($4, ''), $5)`, a.Actor, a.Action, eventID, a.Reason,
		store.TextOrNull(a.Details))
	return err
}
