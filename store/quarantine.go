package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herald-outbox/herald/internal/redact"
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
	// After, when set, lists only the events after it in the list's order
	// (quarantined_at, id): the next page of a list.
	After *QuarantineCursor
	// Limit caps the result. Defaults to 100.
	Limit int
}

// Matches returns the filter's equalities that are set, in a fixed order.
func (f QuarantineFilter) Matches() []Match {
	return matches("aggregate_type", f.AggregateType, "aggregate_id", f.AggregateID,
		"event_type", f.EventType, "error_class", f.ErrorClass)
}

// QuarantineCursor is a position in the quarantine list's order.
type QuarantineCursor struct {
	QuarantinedAt time.Time
	ID            string
}

// QuarantineListLimitDefault is QuarantineFilter.Limit's default.
const QuarantineListLimitDefault = 100

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

// EventDetail is everything `herald quarantine show` prints.
type EventDetail struct {
	QuarantinedEvent
	State         string            `json:"state"`
	SchemaVersion int               `json:"schema_version"`
	Payload       json.RawMessage   `json:"payload"`
	Headers       map[string]string `json:"headers,omitempty"`
	// Defect, when set, is why the stored row cannot be published
	// (RawEvent.Decode), with the bad column's stored value scrubbed of
	// secrets. Payload is left out when it is not JSON, and Headers when
	// they do not decode.
	Defect        *RowDefect      `json:"defect,omitempty"`
	PublishedAt   *time.Time      `json:"published_at,omitempty"`
	DiscardedAt   *time.Time      `json:"discarded_at,omitempty"`
	NextAttemptAt *time.Time      `json:"next_attempt_at,omitempty"`
	Failures      []FailureRecord `json:"failures"`
	Audit         []AuditRecord   `json:"audit"`
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

// States of an event as operators see them (docs/design.md, "States of an
// outbox row").
const (
	StatePending     = "pending"
	StateBackingOff  = "backing_off"
	StateHeld        = "held"
	StateQuarantined = "quarantined"
	StateDiscarded   = "discarded"
	StatePublished   = "published"
	// StateStreaming: an untouched row at or after a change stream's
	// watermark: published by the stream, or on its way (its checkpoint
	// decides; docs/design.md, section 9.4).
	StateStreaming = "streaming"
)

// state names a row's state; watermark is the change stream's (zero
// without one).
func (r EventRow) state(watermark time.Time) string {
	switch {
	case r.PublishedAt != nil:
		return StatePublished
	case r.DiscardedAt != nil:
		return StateDiscarded
	case r.QuarantinedAt != nil:
		return StateQuarantined
	case r.ErrorClass == ErrorClassHeld:
		return StateHeld
	case r.ErrorClass == ErrorClassReleased:
		return StatePending
	case r.ErrorClass != "":
		return StateBackingOff
	case !watermark.IsZero() && r.NextAttemptAt.Before(watermark):
		return StatePublished // by the change stream (invariant S2)
	case !watermark.IsZero():
		return StateStreaming
	}
	return StatePending
}

// ListQuarantined returns quarantined (not discarded) events, oldest
// quarantine first.
func (s *Store) ListQuarantined(ctx context.Context, f QuarantineFilter) ([]QuarantinedEvent, error) {
	if f.Limit <= 0 {
		f.Limit = QuarantineListLimitDefault
	}
	f.Since, f.Until = f.Since.UTC(), f.Until.UTC()
	if f.After != nil {
		after := *f.After
		after.QuarantinedAt = after.QuarantinedAt.UTC()
		f.After = &after
	}
	list, err := s.dialect.ListQuarantined(ctx, s.db, f)
	if err != nil {
		return nil, fmt.Errorf("list quarantined: %w", err)
	}
	return list, nil
}

// ShowEvent returns one event with its failed attempts and audit trail.
func (s *Store) ShowEvent(ctx context.Context, id string) (EventDetail, error) {
	row, err := s.dialect.ReadEvent(ctx, s.db, id, false)
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event %s: %w", id, err)
	}
	watermark, err := s.watermark(ctx)
	if err != nil {
		return EventDetail{}, fmt.Errorf("show event %s: %w", id, err)
	}
	d := EventDetail{
		QuarantinedEvent: QuarantinedEvent{
			ID: row.ID, AggregateType: row.Key.AggregateType, AggregateID: row.Key.AggregateID,
			AggregateSeq: row.Key.Seq, EventType: row.EventType, Attempts: row.Attempts,
			ErrorClass: row.ErrorClass, LastError: row.LastError, OccurredAt: row.OccurredAt,
		},
		State: row.state(watermark), SchemaVersion: row.SchemaVersion, Payload: row.Payload,
		PublishedAt: row.PublishedAt, DiscardedAt: row.DiscardedAt,
	}
	e := RawEvent{ID: row.ID, AggregateType: row.Key.AggregateType, AggregateID: row.Key.AggregateID,
		AggregateSeq: row.Key.Seq, EventType: row.EventType, SchemaVersion: int64(row.SchemaVersion),
		Payload: row.Payload, Headers: row.Headers}.Decode()
	d.Headers = e.Headers
	if def := e.Defect; def != nil {
		shown := *def
		shown.Stored = redact.Secrets(def.Stored)
		d.Defect = &shown
	}
	if !json.Valid(row.Payload) {
		d.Payload = nil // Defect shows it; the JSON of EventDetail could not hold it
	}
	if !row.Forever {
		d.NextAttemptAt = &row.NextAttemptAt
	}
	if row.QuarantinedAt != nil {
		d.QuarantinedAt = *row.QuarantinedAt
		if d.HeldBehind, err = s.dialect.CountBehind(ctx, s.db, row.Key, false); err != nil {
			return d, fmt.Errorf("show event %s: held events: %w", id, err)
		}
	}
	if d.Failures, err = s.dialect.ReadFailures(ctx, s.db, id); err != nil {
		return d, fmt.Errorf("show event %s: failures: %w", id, err)
	}
	if d.Audit, err = s.dialect.ReadAudit(ctx, s.db, id); err != nil {
		return d, fmt.Errorf("show event %s: audit: %w", id, err)
	}
	if d.Failures == nil {
		d.Failures = []FailureRecord{}
	}
	if d.Audit == nil {
		d.Audit = []AuditRecord{}
	}
	return d, nil
}

// Operator actions recorded in the audit trail.
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
// it, so they follow it in order. It records the action in the audit
// trail. A second call is a no-op. With dryRun nothing is written.
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
	row, err := s.dialect.ReadEvent(ctx, tx, id, true)
	if err != nil {
		return ch, fmt.Errorf("%s %s: %w", action, id, err)
	}
	stream, _, err := s.dialect.ReadStream(ctx, tx)
	if err != nil {
		return ch, fmt.Errorf("%s %s: read the stream's watermark: %w", action, id, err)
	}
	ch.State = row.state(stream.Watermark)
	if ch.State != StateQuarantined {
		return ch, nil // nothing to do: idempotent
	}
	held, err := s.dialect.CountBehind(ctx, tx, row.Key, true)
	if err != nil {
		return ch, fmt.Errorf("%s %s: count held events: %w", action, id, err)
	}
	ch.Changed, ch.Released = true, held
	if action == AuditRetry {
		ch.State = StatePending
	} else {
		ch.State = StateDiscarded
	}
	if dryRun {
		return ch, nil
	}
	if action == AuditRetry {
		err = s.dialect.Requeue(ctx, tx, id)
	} else {
		err = s.dialect.Discard(ctx, tx, id)
	}
	if err != nil {
		return ch, fmt.Errorf("%s %s: %w", action, id, err)
	}
	// The held events become ready; the claim checks their order again, so
	// after a retry they still wait for this event.
	if err := s.dialect.ReleaseHeldBehind(ctx, tx, row.Key); err != nil {
		return ch, fmt.Errorf("%s %s: release held events: %w", action, id, err)
	}
	details, err := json.Marshal(map[string]any{"aggregate_type": row.Key.AggregateType, "aggregate_id": row.Key.AggregateID,
		"aggregate_seq": row.Key.Seq, "error_class": row.ErrorClass, "released": held})
	if err != nil {
		return ch, err
	}
	if err := s.dialect.AppendAudit(ctx, tx, AuditRecord{Actor: actor, Action: action, EventID: id, Reason: reason, Details: details}); err != nil {
		return ch, fmt.Errorf("%s %s: audit: %w", action, id, err)
	}
	if err := tx.Commit(); err != nil {
		return ch, fmt.Errorf("%s %s: commit: %w", action, id, err)
	}
	return ch, nil
}
