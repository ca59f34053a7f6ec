// Package store is the storage contract the relay needs; store/mysql
// implements it for MySQL 8.0+ and MariaDB 10.6+. docs/design.md explains
// the state machine and the lock rules these operations keep.
package store

import (
	"context"
	"fmt"
	"time"
)

// Never is the next_attempt_at of rows the claim must not reach:
// quarantined and discarded events, and events held behind a quarantined
// one.
var Never = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Event is one outbox row as the relay publishes it.
type Event struct {
	ID            string
	AggregateType string
	AggregateID   string
	// AggregateSeq is the event's position inside its aggregate (1, 2, ...).
	AggregateSeq  uint64
	EventType     string
	SchemaVersion uint16
	Payload       []byte
	Headers       map[string]string
	OccurredAt    time.Time
	// Attempts counts claims of this event, this one included.
	Attempts uint32
	// PreviousErrorClass is the class of the last failed attempt ("" if
	// none).
	PreviousErrorClass string
}

// OrderPolicy says what happens to an aggregate's later events while an
// earlier one cannot be published.
type OrderPolicy string

const (
	// OrderHold parks later events behind a head that is leased, backing off
	// or quarantined. The default.
	OrderHold OrderPolicy = "hold"
	// OrderSkipQuarantined treats a quarantined head as done, so its
	// aggregate's later events flow (out of order with the head).
	OrderSkipQuarantined OrderPolicy = "skip-quarantined"
)

// ClaimRequest asks for a batch.
type ClaimRequest struct {
	// RelayID is written to locked_by.
	RelayID string
	// Limit is the most candidate rows one claim reads.
	Limit int
	// Lease is how long the claimed events belong to this relay.
	Lease time.Duration
	// Policy is the order policy.
	Policy OrderPolicy
}

// Lease identifies one claim; its fields are the fencing token every later
// update of the claimed rows must match.
type Lease struct {
	RelayID  string
	LockedAt time.Time
	// Expires is when the rows become claimable again (database clock).
	Expires time.Time
}

// Claim is the result of one claim.
type Claim struct {
	// Lease is the claim's fencing token; only RelayID is set when no event
	// was leased.
	Lease Lease
	// Events are leased to this relay, sorted by aggregate and AggregateSeq.
	Events []Event
	// Held counts candidates parked behind an earlier event of their
	// aggregate that is backing off or quarantined.
	Held int
	// Skipped counts candidates passed over, untouched, because an earlier
	// event of their aggregate is in flight (leased by another relay).
	Skipped int
	// Steals counts events taken over from an expired lease.
	Steals int
	// Duration is how long the claim transaction took.
	Duration time.Duration
}

// Failure is an event whose publication failed.
type Failure struct {
	EventID string
	// Class is a short error class (timeout, too_large, ...).
	Class string
	// Message is the scrubbed error text (cut to 1000 characters).
	Message string
	// RetryAfter is the backoff before the next attempt.
	RetryAfter time.Duration
	// Quarantine isolates the event for an operator instead of retrying.
	Quarantine bool
}

// Unsent is an event that was claimed but not produced because an earlier
// event of its aggregate in the same batch failed, or not published for a
// reason that is not its own (shutdown, a configuration failure): it is
// released as if it had not been claimed, its attempt given back.
type Unsent struct {
	EventID string
	// Behind is the id of the failed event it waits for.
	Behind string
	// Class and Message, when Class is set, are recorded as error_class and
	// last_error instead of "held behind Behind": the configuration
	// failure that stopped it.
	Class   string
	Message string
}

// Outcome is what happened to a claimed batch.
type Outcome struct {
	Published []string
	Failed    []Failure
	Unsent    []Unsent
}

// Settled reports how a Settle went.
type Settled struct {
	// Published is the number of rows marked published.
	Published int
	// LostLeases counts rows named in the outcome that the lease no longer
	// owned (another relay took them over): their updates were fenced off.
	LostLeases int
	// Quarantined is the number of rows quarantined.
	Quarantined int
}

// Store is what the relay needs from the database.
type Store interface {
	// Claim leases a batch of events whose aggregate predecessors are done.
	Claim(ctx context.Context, req ClaimRequest) (Claim, error)
	// Settle records a batch's outcome, fenced by its lease.
	Settle(ctx context.Context, lease Lease, out Outcome, policy OrderPolicy) (Settled, error)
}

// CleanupRequest says what one cleanup pass may delete.
type CleanupRequest struct {
	// Retention keeps published events younger than this (the replay
	// window). Required.
	Retention time.Duration
	// InboxRetention keeps consumed_events rows younger than this; 0 leaves
	// the inbox alone. It must exceed Retention: a replayed event must still
	// find its inbox row, or it would be applied twice.
	InboxRetention time.Duration
	// BatchSize is the most rows one DELETE removes. Required.
	BatchSize int
	// Pause is the wait between batches, to leave the database to live
	// traffic.
	Pause time.Duration
	// MaxBatches stops a pass after this many batches per table (0: until
	// done).
	MaxBatches int
}

// Validate checks a request; errors name the field.
func (r CleanupRequest) Validate() error {
	switch {
	case r.Retention <= 0:
		return fmt.Errorf("retention must be positive, got %v", r.Retention)
	case r.BatchSize < 1 || r.BatchSize > 10000:
		return fmt.Errorf("batch size must be 1..10000, got %d", r.BatchSize)
	case r.Pause < 0:
		return fmt.Errorf("pause must not be negative, got %v", r.Pause)
	case r.InboxRetention != 0 && r.InboxRetention <= r.Retention:
		return fmt.Errorf("inbox retention (%v) must be longer than the outbox retention, the replay window (%v): "+
			"an event replayed from the outbox must still find its inbox row", r.InboxRetention, r.Retention)
	}
	return nil
}

// CleanupReport is what a cleanup pass deleted.
type CleanupReport struct {
	Events   int64 `json:"events_deleted"`
	Failures int64 `json:"failures_deleted"`
	Inbox    int64 `json:"inbox_rows_deleted"`
	Batches  int   `json:"batches"`
	// LargestBatch is the most rows one statement deleted.
	LargestBatch int64 `json:"largest_batch"`
}
