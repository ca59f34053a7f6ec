package store

import (
	"database/sql"
	"encoding/json"
	"time"
)

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
	// Fields are the columns a foreign outbox table's mapping copies
	// beside the event (docs/design.md, section 10): its additional fields
	// by column name, each a JSON value. Nil for herald's own rows.
	Fields map[string]json.RawMessage
	// Bucket is the aggregate's bucket (docs/design.md, section 4.1).
	Bucket int
	// Attempts is this attempt's number: the failed attempts so far, plus
	// one.
	Attempts uint32
	// PreviousErrorClass is the class of the last failed attempt ("" if
	// none).
	PreviousErrorClass string
	// Defect, when set, is why the stored row cannot be published as it is
	// (RawEvent.Decode): the fields above hold what could be read, and the
	// relay quarantines the event without producing it.
	Defect *RowDefect
}

// OrderPolicy says what happens to an aggregate's later events while an
// earlier one cannot be published.
type OrderPolicy string

const (
	// OrderHold holds later events behind a head that is backing off or
	// quarantined. The default.
	OrderHold OrderPolicy = "hold"
	// OrderSkipQuarantined treats a quarantined head as done, so its
	// aggregate's later events flow (out of order with the head).
	OrderSkipQuarantined OrderPolicy = "skip-quarantined"
)

// ClaimRequest asks for a batch.
type ClaimRequest struct {
	// Ownership names the buckets to claim from (Rebalance returns it).
	Ownership Ownership
	// Limit is the most events one claim takes.
	Limit int
	// Policy is the order policy.
	Policy OrderPolicy
	// Known remembers done events from claim to claim, so their successors
	// need no predecessor read; Settle adds what it marks. Nil remembers
	// nothing.
	Known *Known
	// After, when set, continues a backlog from where the previous claim's
	// read ended (Claim.Next), past the rows of batches still being settled;
	// nil starts from the oldest ready event.
	After *ReadyCursor
	// HandedOver claims only the rows in the polling path's hands
	// (error_class set), as a change stream's leader does
	// (docs/design.md, section 9.4): their untouched predecessors are done.
	HandedOver bool
	// Watermark is the change stream's watermark (StreamLease.Watermark),
	// zero without one: the untouched rows before it are published, and
	// so are done predecessors (docs/design.md, section 9.4).
	Watermark time.Time
}

// Claim is the result of one claim.
type Claim struct {
	// Ownership is what the events were claimed under: the fencing token
	// of their settlement.
	Ownership Ownership
	// Events belong to this relay until it settles them, sorted by
	// aggregate and AggregateSeq.
	Events []Event
	// Held counts candidates held behind an earlier event of their
	// aggregate that is backing off or quarantined.
	Held int
	// Duration is how long the claim took.
	Duration time.Duration
	// Next is where a following claim may continue; nil when the claim read
	// every ready event (none may be left behind it).
	Next *ReadyCursor

	known *Known
	// streamed: planned from a change stream (PlanStream), whose
	// acknowledged events are published by the checkpoint, not by a mark
	// (docs/design.md, section 9.2).
	streamed bool
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

// Unsent is an event that was claimed but not produced: an earlier event
// of its aggregate in the same batch failed, the relay gave the batch up
// (shutdown), or a configuration failure stopped it (not its own fault).
type Unsent struct {
	EventID string
	// Behind is the id of the failed event it waits for; "" when the
	// batch was given up, and the event is left as it was.
	Behind string
	// Class and Message, when Class is set, are the configuration failure
	// that stopped it (kafka.IsConfiguration): it stays ready, with them as
	// error_class and last_error, Behind ignored.
	Class   string
	Message string
}

// Outcome is what happened to a claimed batch.
type Outcome struct {
	Published []string
	Failed    []Failure
	Unsent    []Unsent
	// Checkpoint, when set, moves the change stream's position in the same
	// transaction (docs/design.md, invariant S1). Set it only past events
	// that are published or, failed, released or held, written here.
	Checkpoint *Checkpoint
}

// Checkpoint is a change stream position to save, fenced by the stream
// lease the leader holds at Epoch.
type Checkpoint struct {
	Epoch    uint64
	Position string
	// Watermark, when set, is saved with the position (docs/design.md,
	// section 9.3); the stored one never moves back.
	Watermark time.Time
}

// Settled reports how a Settle went.
type Settled struct {
	// Published is the number of events published: rows marked, or the
	// events of a change stream's claim, published by the checkpoint the
	// settlement wrote.
	Published int
	// LostLeases counts events named in the outcome whose bucket the relay
	// no longer owned (another relay took it over): their updates were
	// fenced off.
	LostLeases int
	// Quarantined is the number of rows quarantined.
	Quarantined int
}

// Store is herald's view of one outbox database: the claim planner, the
// settlement of outcomes and the operators' actions, in dialect-free Go
// over the SQL primitives of a Dialect. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dialect Dialect
}

// New returns a Store on db speaking dialect. db must be opened the
// dialect's way (mysql.Open, postgres.Open).
func New(db *sql.DB, dialect Dialect) *Store {
	return &Store{db: db, dialect: dialect}
}

// Dialect returns the store's dialect.
func (s *Store) Dialect() Dialect { return s.dialect }

// DB returns the store's connection pool.
func (s *Store) DB() *sql.DB { return s.db }
