package store

import (
	"database/sql"
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
	// Class and Message, when Class is set, are the configuration failure
	// that stopped it (kafka.IsConfiguration): it is ready again at once
	// with them as error_class and last_error, Behind ignored.
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
