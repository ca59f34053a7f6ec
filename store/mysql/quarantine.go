package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// ErrEventNotFound: no outbox event has the given id.
var ErrEventNotFound = errors.New("no such event")

// QuarantineFilter selects quarantined events; zero fields match all.
type QuarantineFilter struct {
	AggregateType string
	AggregateID   string
	EventType     string
	ErrorClass    string
	// Since and Until bound quarantined_at.
	Since, Until time.Time
	// Limit caps the result. Defaults to 100.
	Limit int
}

// QuarantinedEvent is one row of `herald quarantine list`.
type QuarantinedEvent struct {
	ID            string    `json:"id"`
	AggregateType string    `json:"aggregate_type"`
	AggregateID   string    `json:"aggregate_id"`
	AggregateSeq  uint64    `json:"aggregate_seq"`
	EventType     string    `json:"event_type"`
	Attempts      int       `json:"attempts"`
	ErrorClass    string    `json:"error_class"`
	LastError     string    `json:"last_error"`
	OccurredAt    time.Time `json:"occurred_at"`
	QuarantinedAt time.Time `json:"quarantined_at"`
	// HeldBehind counts later events of the aggregate waiting for this one.
	HeldBehind int `json:"held_behind"`
}

// ListQuarantined returns quarantined (not discarded) events, oldest first.
func (s *Store) ListQuarantined(ctx context.Context, f QuarantineFilter) ([]QuarantinedEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	where := []string{"e.quarantined_at IS NOT NULL", "e.discarded_at IS NULL", "e.published_at IS NULL"}
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.AggregateType != "" {
		add("e.aggregate_type = ?", f.AggregateType)
	}
	if f.AggregateID != "" {
		add("e.aggregate_id = ?", f.AggregateID)
	}
	if f.EventType != "" {
		add("e.event_type = ?", f.EventType)
	}
	if f.ErrorClass != "" {
		add("e.error_class = ?", f.ErrorClass)
	}
	if !f.Since.IsZero() {
		add("e.quarantined_at >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		add("e.quarantined_at < ?", f.Until.UTC())
	}
	args = append(args, f.Limit)
	// Quarantined rows sit at next_attempt_at = Never: the idx_ready range
	// finds them without scanning the table.
	rows, err := s.db.QueryContext(ctx, `
		SELECT e.id, e.aggregate_type, e.aggregate_id, e.aggregate_seq, e.event_type, e.attempts,
		       COALESCE(e.error_class, ''), COALESCE(e.last_error, ''), e.occurred_at, e.quarantined_at,
		       (SELECT COUNT(*) FROM outbox_events h
		         WHERE h.aggregate_type = e.aggregate_type AND h.aggregate_id = e.aggregate_id
		           AND h.aggregate_seq > e.aggregate_seq AND h.published_at IS NULL
		           AND h.quarantined_at IS NULL AND h.discarded_at IS NULL)
		FROM outbox_events e FORCE INDEX (idx_ready)
		WHERE e.published_at IS NULL AND e.next_attempt_at = ? AND `+strings.Join(where, " AND ")+`
		ORDER BY e.quarantined_at, e.id LIMIT ?`, append([]any{store.Never}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("list quarantined: %w", err)
	}
	defer rows.Close()
	var out []QuarantinedEvent
	for rows.Next() {
		var q QuarantinedEvent
		if err := rows.Scan(&q.ID, &q.AggregateType, &q.AggregateID, &q.AggregateSeq, &q.EventType, &q.Attempts,
			&q.ErrorClass, &q.LastError, &q.OccurredAt, &q.QuarantinedAt, &q.HeldBehind); err != nil {
			return nil, fmt.Errorf("list quarantined: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// EventDetail is everything `herald quarantine show` prints.
type EventDetail struct {
	QuarantinedEvent
	State         string            `json:"state"`
	SchemaVersion int               `json:"schema_version"`
	Payload       json.RawMessage   `json:"payload"`
	Headers       map[string]string `json:"headers,omitempty"`
	PublishedAt   *time.Time        `json:"published_at,omitempty"`
	DiscardedAt   *time.Time        `json:"discarded_at,omitempty"`
	NextAttemptAt time.Time         `json:"next_attempt_at"`
	LockedBy      string            `json:"locked_by,omitempty"`
	Failures      []FailureRecord   `json:"failures"`
	Audit         []AuditRecord     `json:"audit"`
}

// FailureRecord is one failed attempt.
type FailureRecord struct {
	At          time.Time `json:"at"`
	RelayID     string    `json:"relay_id"`
	Attempt     int       `json:"attempt"`
	ErrorClass  string    `json:"error_class"`
	Error       string    `json:"error"`
	Quarantined bool      `json:"quarantined"`
}

// AuditRecord is one operator action.
type AuditRecord struct {
	At      time.Time       `json:"at"`
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	EventID string          `json:"event_id,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// ShowEvent returns one event with its failed attempts and audit trail.
func (s *Store) ShowEvent(ctx context.Context, id string) (EventDetail, error) {
	var (
		d                                 EventDetail
		headers                           sql.NullString
		quarantined, published, discarded sql.NullTime
		lockedBy                          sql.NullString
		errorClass, lastError             sql.NullString
	)
	err := s.db.QueryRowContext(ctx, `
		SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version, payload, headers,
		       attempts, error_class, last_error, occurred_at, quarantined_at, published_at, discarded_at,
		       next_attempt_at, locked_by
		FROM outbox_events WHERE id = ?`, id).Scan(
		&d.ID, &d.AggregateType, &d.AggregateID, &d.AggregateSeq, &d.EventType, &d.SchemaVersion, &d.Payload, &headers,
		&d.Attempts, &errorClass, &lastError, &d.OccurredAt, &quarantined, &published, &discarded,
		&d.NextAttemptAt, &lockedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("event %s: %w", id, ErrEventNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("show event %s: %w", id, err)
	}
	d.ErrorClass, d.LastError, d.LockedBy = errorClass.String, lastError.String, lockedBy.String
	if headers.Valid {
		if err := json.Unmarshal([]byte(headers.String), &d.Headers); err != nil {
			return d, fmt.Errorf("show event %s: headers: %w", id, err)
		}
	}
	if quarantined.Valid {
		d.QuarantinedAt = quarantined.Time
	}
	if published.Valid {
		d.PublishedAt = &published.Time
	}
	if discarded.Valid {
		d.DiscardedAt = &discarded.Time
	}
	d.State = eventState(published.Valid, discarded.Valid, quarantined.Valid, lockedBy.Valid, d.ErrorClass)

	fr, err := s.db.QueryContext(ctx, `SELECT failed_at, relay_id, attempt, error_class, error, quarantined
		FROM outbox_failures WHERE event_id = ? ORDER BY id`, id)
	if err != nil {
		return d, fmt.Errorf("show event %s: failures: %w", id, err)
	}
	defer fr.Close()
	for fr.Next() {
		var f FailureRecord
		if err := fr.Scan(&f.At, &f.RelayID, &f.Attempt, &f.ErrorClass, &f.Error, &f.Quarantined); err != nil {
			return d, err
		}
		d.Failures = append(d.Failures, f)
	}
	if err := fr.Err(); err != nil {
		return d, err
	}
	d.Audit, err = s.audit(ctx, id)
	return d, err
}

func (s *Store) audit(ctx context.Context, eventID string) ([]AuditRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at, actor, action, COALESCE(event_id, ''), COALESCE(reason, ''), details
		FROM outbox_audit WHERE event_id = ? ORDER BY id`, eventID)
	if err != nil {
		return nil, fmt.Errorf("audit of %s: %w", eventID, err)
	}
	defer rows.Close()
	var out []AuditRecord
	for rows.Next() {
		var a AuditRecord
		var details sql.NullString
		if err := rows.Scan(&a.At, &a.Actor, &a.Action, &a.EventID, &a.Reason, &details); err != nil {
			return nil, err
		}
		if details.Valid {
			a.Details = json.RawMessage(details.String)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func eventState(published, discarded, quarantined, leased bool, errorClass string) string {
	switch {
	case published:
		return "published"
	case discarded:
		return "discarded"
	case quarantined:
		return "quarantined"
	case leased:
		return "leased"
	case errorClass == ErrorClassHeld:
		return "held"
	case errorClass != "":
		return "backing_off"
	}
	return "pending"
}

// Operator actions recorded in outbox_audit.
const (
	AuditRetry   = "retry"
	AuditDiscard = "discard"
)

// QuarantineChange is what a retry or discard did (or, dry, would do).
type QuarantineChange struct {
	EventID string `json:"event_id"`
	// Changed is false when the event was not quarantined (already retried,
	// discarded or published): the call was a no-op.
	Changed bool   `json:"changed"`
	State   string `json:"state"`
	// Released counts the aggregate's later events made ready with it.
	Released int `json:"released"`
}

// Retry puts a quarantined event back in line with a fresh attempt count,
// and makes ready the later events of its aggregate that were held behind
// it, so they follow it in order. It records the action in outbox_audit. A
// second call is a no-op. With dryRun nothing is written.
func (s *Store) Retry(ctx context.Context, id, actor, reason string, dryRun bool) (QuarantineChange, error) {
	return s.resolveQuarantine(ctx, id, actor, reason, AuditRetry, dryRun)
}

// Discard gives a quarantined event up: it will never be published, and the
// later events of its aggregate proceed without it. reason is required.
func (s *Store) Discard(ctx context.Context, id, actor, reason string, dryRun bool) (QuarantineChange, error) {
	if strings.TrimSpace(reason) == "" {
		return QuarantineChange{}, errors.New("discard needs a reason")
	}
	return s.resolveQuarantine(ctx, id, actor, reason, AuditDiscard, dryRun)
}

func (s *Store) resolveQuarantine(ctx context.Context, id, actor, reason, action string, dryRun bool) (QuarantineChange, error) {
	ch := QuarantineChange{EventID: id}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return ch, err
	}
	defer tx.Rollback()
	var (
		aggType, aggID                    string
		seq                               uint64
		quarantined, published, discarded bool
		errorClass                        sql.NullString
		lockedBy                          sql.NullString
	)
	err = tx.QueryRowContext(ctx, `SELECT aggregate_type, aggregate_id, aggregate_seq,
		quarantined_at IS NOT NULL, published_at IS NOT NULL, discarded_at IS NOT NULL, error_class, locked_by
		FROM outbox_events WHERE id = ? FOR UPDATE`, id).
		Scan(&aggType, &aggID, &seq, &quarantined, &published, &discarded, &errorClass, &lockedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return ch, fmt.Errorf("event %s: %w", id, ErrEventNotFound)
	}
	if err != nil {
		return ch, fmt.Errorf("%s %s: %w", action, id, err)
	}
	ch.State = eventState(published, discarded, quarantined, lockedBy.Valid, errorClass.String)
	if !quarantined || discarded || published {
		return ch, nil // nothing to do: idempotent
	}
	// The later events held behind it (error_class held, parked at Never).
	var held int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_events
		WHERE aggregate_type = ? AND aggregate_id = ? AND aggregate_seq > ?
		  AND published_at IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL
		  AND locked_by IS NULL AND error_class = ?`, aggType, aggID, seq, ErrorClassHeld).Scan(&held); err != nil {
		return ch, fmt.Errorf("%s %s: count held events: %w", action, id, err)
	}
	ch.Changed, ch.Released = true, held
	if action == AuditRetry {
		ch.State = "pending"
	} else {
		ch.State = "discarded"
	}
	if dryRun {
		return ch, nil
	}
	if action == AuditRetry {
		_, err = tx.ExecContext(ctx, `UPDATE outbox_events SET quarantined_at = NULL, next_attempt_at = NOW(6),
			attempts = 0, error_class = NULL, last_error = NULL WHERE id = ?`, id)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE outbox_events SET discarded_at = NOW(6) WHERE id = ?`, id)
	}
	if err != nil {
		return ch, fmt.Errorf("%s %s: %w", action, id, err)
	}
	// The held events become ready; the claim checks their order again, so
	// after a retry they still wait for this event.
	if _, err := tx.ExecContext(ctx, `UPDATE outbox_events SET next_attempt_at = NOW(6), error_class = NULL, last_error = NULL
		WHERE aggregate_type = ? AND aggregate_id = ? AND aggregate_seq > ?
		  AND published_at IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL
		  AND locked_by IS NULL AND error_class = ?`, aggType, aggID, seq, ErrorClassHeld); err != nil {
		return ch, fmt.Errorf("%s %s: release held events: %w", action, id, err)
	}
	details, _ := json.Marshal(map[string]any{"aggregate_type": aggType, "aggregate_id": aggID,
		"aggregate_seq": seq, "error_class": errorClass.String, "released": held})
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_audit (at, actor, action, event_id, reason, details)
		VALUES (NOW(6), ?, ?, ?, NULLIF(?, ''), ?)`, actor, action, id, reason, string(details)); err != nil {
		return ch, fmt.Errorf("%s %s: audit: %w", action, id, err)
	}
	if err := tx.Commit(); err != nil {
		return ch, fmt.Errorf("%s %s: commit: %w", action, id, err)
	}
	return ch, nil
}
