package store

import (
	"context"
	"database/sql"
	"time"
)

// Querier runs statements: a *sql.DB, or a *sql.Tx when the core holds a
// transaction open around several primitives.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Dialect is everything herald needs from one SQL database. Its methods are
// SQL primitives that decide nothing: which rows a claim leases, holds or
// passes over, how an outcome becomes marks, failures and releases, and how
// operators' actions change the rows are decided above it, in this package.
// A dialect that passes the conformance suite (package storetest) is a
// database herald supports. Times it takes and returns are the database
// clock's, in UTC, whatever the session's time zone.
type Dialect interface {
	// Name is the dialect's short name, as in "mysql" or "postgres".
	Name() string
	// Now reads the database clock.
	Now(ctx context.Context, q Querier) (time.Time, error)

	ClaimDialect
	SettleDialect
	OperationsDialect
	WriterDialect
	InboxDialect
}

// SeqKey names one event by its place in its aggregate.
type SeqKey struct {
	AggregateType string
	AggregateID   string
	Seq           uint64
}

// Previous is the key of the event right before k in its aggregate; only
// meaningful when k.Seq > 1.
func (k SeqKey) Previous() SeqKey {
	return SeqKey{k.AggregateType, k.AggregateID, k.Seq - 1}
}

// Candidate is a ready row a claim considers.
type Candidate struct {
	ID  string
	Key SeqKey
}

// Predecessor is the state of the event right before a candidate, read
// without a lock.
type Predecessor struct {
	ID string
	// Done: published or discarded.
	Done bool
	// Quarantined: isolated for an operator.
	Quarantined bool
	// Leased: under a live lease (locked_by set, lease not expired).
	Leased bool
	// NextAttempt is when it becomes claimable; meaningless when Forever.
	NextAttempt time.Time
	// Forever: it will never become claimable by itself (quarantined,
	// discarded, or held behind a quarantined event).
	Forever bool
}

// ready says whether the predecessor could be claimed at now.
func (p Predecessor) ready(now time.Time) bool {
	return !p.Done && !p.Leased && !p.Quarantined && !p.Forever && !p.NextAttempt.After(now)
}

// LockedEvent is a candidate a claim locked, read in full.
type LockedEvent struct {
	Event Event
	// Stolen: the row carried an expired lease of another claim.
	Stolen bool
}

// Hold says how long events wait behind an earlier event of their
// aggregate, and which one.
type Hold struct {
	// Until is when they become claimable again; ignored when Forever.
	Until time.Time
	// Forever holds them until an operator retries or discards Behind.
	Forever bool
	// Behind is the id of the event they wait for.
	Behind string
}

// ClaimDialect is what a claim runs inside its READ COMMITTED transaction
// (docs/design.md, "Claiming").
type ClaimDialect interface {
	// ReadCandidates returns up to limit ready rows (unpublished, not under
	// a live lease, backoff or hold), in claim order, without locking them.
	ReadCandidates(ctx context.Context, q Querier, limit int) ([]Candidate, error)
	// ReadPredecessors reads the given events without locking them. now is
	// the database clock of the read, and may be zero when none was found
	// (no decision then depends on it); an event that does not exist is
	// absent from found.
	ReadPredecessors(ctx context.Context, q Querier, keys []SeqKey) (now time.Time, found map[SeqKey]Predecessor, err error)
	// LockReady locks those of ids that are still ready, skipping rows
	// another transaction holds (FOR UPDATE SKIP LOCKED), and reads them in
	// full. now is the database clock (zero when nothing was locked).
	LockReady(ctx context.Context, q Querier, ids []string) (now time.Time, locked []LockedEvent, err error)
	// Lease writes the lease on locked rows: locked_by, locked_at,
	// next_attempt_at = lease expiry, attempts + 1.
	Lease(ctx context.Context, q Querier, ids []string, lease Lease) error
	// Hold moves locked rows out of the claim range behind another event,
	// saying so in error_class and last_error.
	Hold(ctx context.Context, q Querier, ids []string, h Hold) error
}

// FailureUpdate is a failed event's new state.
type FailureUpdate struct {
	EventID string
	Class   string
	// Message is scrubbed and cut to LastErrorMaxLen characters.
	Message string
	// RetryAt is when it may be claimed again; ignored when Quarantine.
	RetryAt time.Time
	// Quarantine isolates it (quarantined_at = At, never claimable).
	Quarantine bool
	// At is the database time of the failure.
	At time.Time
}

// ReleaseUpdate is the new state of an event that was leased but not sent:
// its lease and attempt are undone, and it waits as Hold says (Hold.Behind
// is not written: Message names it).
type ReleaseUpdate struct {
	EventID string
	// Hold is when it becomes claimable again.
	Hold Hold
	// Class and Message are its error_class and last_error; Message is
	// scrubbed and cut to LastErrorMaxLen characters.
	Class   string
	Message string
}

// SettleDialect records a batch's outcome; every update is fenced by the
// lease (docs/design.md, invariant F1) and reports whether it touched the
// row.
type SettleDialect interface {
	// MarkPublished sets published_at on the rows of ids still under lease
	// and returns how many it marked.
	MarkPublished(ctx context.Context, q Querier, ids []string, lease Lease) (int, error)
	// Fail records a failed attempt: a retry time or quarantine, lease
	// cleared, last_error and error_class set.
	Fail(ctx context.Context, q Querier, f FailureUpdate, lease Lease) (bool, error)
	// LogFailure appends the failed attempt to the failure log.
	LogFailure(ctx context.Context, q Querier, f FailureUpdate, relayID string) error
	// Release gives back an event that was leased but not sent: the lease
	// and its attempt are undone, next_attempt_at, error_class and
	// last_error set as r says.
	Release(ctx context.Context, q Querier, r ReleaseUpdate, lease Lease) (bool, error)
}

// EventRow is one outbox row as operators see it.
type EventRow struct {
	Key           SeqKey
	ID            string
	EventType     string
	SchemaVersion int
	Payload       []byte
	Headers       map[string]string
	Attempts      int
	ErrorClass    string
	LastError     string
	OccurredAt    time.Time
	NextAttemptAt time.Time
	// Forever: next_attempt_at is the dialect's "never".
	Forever       bool
	LockedBy      string
	QuarantinedAt *time.Time
	PublishedAt   *time.Time
	DiscardedAt   *time.Time
}

// OperationsDialect serves the operators' tools: status, quarantine,
// replay and cleanup.
type OperationsDialect interface {
	// ReadBacklog measures the outbox from indexed ranges.
	ReadBacklog(ctx context.Context, q Querier) (Backlog, error)
	// ListQuarantined returns quarantined (not discarded) events, oldest
	// quarantine first, with the count of later events held behind each.
	ListQuarantined(ctx context.Context, q Querier, f QuarantineFilter) ([]QuarantinedEvent, error)
	// ReadEvent reads one row; lock takes a row lock (inside a
	// transaction). A missing row is ErrEventNotFound.
	ReadEvent(ctx context.Context, q Querier, id string, lock bool) (EventRow, error)
	// ReadFailures returns an event's failure log, oldest first.
	ReadFailures(ctx context.Context, q Querier, id string) ([]FailureRecord, error)
	// ReadAudit returns the operator actions on an event, oldest first.
	ReadAudit(ctx context.Context, q Querier, id string) ([]AuditRecord, error)
	// CountBehind counts the unpublished events after k in its aggregate
	// that are not quarantined or discarded themselves (they wait for it);
	// heldOnly narrows them to those held (error_class held, no lease).
	CountBehind(ctx context.Context, q Querier, k SeqKey, heldOnly bool) (int, error)
	// ReleaseHeldBehind makes the events CountBehind(heldOnly) counts ready
	// now.
	ReleaseHeldBehind(ctx context.Context, q Querier, k SeqKey) error
	// Requeue makes a quarantined event ready now with no attempts.
	Requeue(ctx context.Context, q Querier, id string) error
	// Discard sets discarded_at.
	Discard(ctx context.Context, q Querier, id string) error
	// AppendAudit records an operator action (At is set by the database).
	AppendAudit(ctx context.Context, q Querier, a AuditRecord) error

	// ReplayPage returns up to limit published events of sel after pos, in
	// (aggregate_type, aggregate_id, aggregate_seq) order.
	ReplayPage(ctx context.Context, q Querier, sel ReplaySelection, pos ReplayPosition, limit int) ([]Event, error)
	// LoadReplayCheckpoint reads a checkpoint as saved; found is false when
	// there is none.
	LoadReplayCheckpoint(ctx context.Context, q Querier, name string) (cp ReplayCheckpoint, found bool, err error)
	// SaveReplayCheckpoint inserts or updates a checkpoint.
	SaveReplayCheckpoint(ctx context.Context, q Querier, cp ReplayCheckpoint, finished bool) error

	// DeletePublished deletes up to limit published events with
	// published_at before cutoff, and returns how many it deleted.
	DeletePublished(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
	// DeleteFailures deletes up to limit failure-log rows before cutoff.
	DeleteFailures(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
	// DeleteConsumed deletes up to limit inbox rows consumed before cutoff.
	DeleteConsumed(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
}

// NewEvent is one row the outbox writer inserts.
type NewEvent struct {
	ID            string
	Key           SeqKey
	EventType     string
	SchemaVersion uint16
	Payload       []byte
	// Headers is the JSON object of headers, nil for none.
	Headers []byte
	// OccurredAt is in UTC, cut to microseconds.
	OccurredAt time.Time
}

// WriterDialect is what outbox.Writer runs inside the caller's
// transaction. It must not depend on the session's time zone: the caller's
// connection is not herald's.
type WriterDialect interface {
	// ReserveSequences hands out n consecutive aggregate_seq numbers of an
	// aggregate and returns the first; it locks the aggregate's counter
	// until tx ends (docs/design.md, invariant W1).
	ReserveSequences(ctx context.Context, tx *sql.Tx, aggregateType, aggregateID string, n uint64) (first uint64, err error)
	// InsertEvents inserts rows, ready at once (next_attempt_at = now).
	InsertEvents(ctx context.Context, tx *sql.Tx, rows []NewEvent) error
}

// InboxDialect is what the inbox runs inside the consumer's transaction.
type InboxDialect interface {
	// InsertConsumed records that consumer applied eventID; duplicate is
	// true, and the transaction still usable, when it already had.
	InsertConsumed(ctx context.Context, tx *sql.Tx, consumer, eventID string) (duplicate bool, err error)
	// IsTransient reports whether err is a server error that passes by
	// itself (a deadlock, a lock wait timeout, a server shutting down or
	// read-only during a failover); network errors are judged above.
	IsTransient(err error) bool
}
