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
// clock's, in UTC, whatever the session's time zone. A dialect hands the
// rows it reads to the core's scanners (ScanReadyEvents, ScanEventRow, ...,
// in scan.go), which say the columns' order: dialects differ in their SQL
// text, the errors they map and what truly differs, not in Go.
type Dialect interface {
	// Name is the dialect's short name, as in "mysql" or "postgres".
	Name() string
	// Now reads the database clock.
	Now(ctx context.Context, q Querier) (time.Time, error)

	ClaimDialect
	BucketDialect
	StreamDialect
	SettleDialect
	OperationsDialect
	BacklogDialect
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
	// NextAttempt is when it becomes claimable; meaningless when Forever.
	NextAttempt time.Time
	// Forever: it will never become claimable by itself (quarantined,
	// discarded, or held behind a quarantined event).
	Forever bool
	// Untouched: as its writer inserted it, written by no relay, stream or
	// operator since (docs/design.md, section 9.2). Whether that means
	// published is the core's to say (section 9.4).
	Untouched bool
}

// ready says whether the predecessor could be claimed at now.
func (p Predecessor) ready(now time.Time) bool {
	return !p.Done && !p.Quarantined && !p.Forever && !p.NextAttempt.After(now)
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

// AggregateKey names an aggregate.
type AggregateKey struct {
	AggregateType string
	AggregateID   string
}

// ReadyRequest says which ready events a claim reads.
type ReadyRequest struct {
	// Buckets are the buckets to read from; nil reads every bucket.
	Buckets []int
	// Exclude are aggregates to pass over.
	Exclude []AggregateKey
	// After, when set, reads only events after it in claim order.
	After *ReadyCursor
	// HandedOver reads only the rows in the polling path's hands
	// (error_class set: docs/design.md, rule T), as the leader of a change
	// stream does.
	HandedOver bool
	// Watermark, when set, is a change stream's watermark: the untouched
	// rows before it are published (docs/design.md, section 9.3), so the
	// read takes the rows in the polling path's hands and the untouched
	// rows at or after it.
	Watermark time.Time
	// Limit is the most events to read.
	Limit int
}

// ReadyCursor is a position in claim order.
type ReadyCursor struct {
	NextAttemptAt time.Time
	OccurredAt    time.Time
	ID            string
}

// ClaimDialect is what a claim reads and writes (docs/design.md, section
// 4.2).
type ClaimDialect interface {
	// ReadReady returns up to r.Limit ready events (unpublished, not backing
	// off, held, quarantined or discarded) of r.Buckets, in claim order
	// (next_attempt_at, occurred_at, id), in full, with their Bucket,
	// Attempts as stored (failed attempts) and PreviousErrorClass; without
	// locking them (ScanReadyEvents). last is the position of the last row
	// read (zero when none was).
	ReadReady(ctx context.Context, q Querier, r ReadyRequest) (events []Event, last ReadyCursor, err error)
	// BucketOf is an aggregate's bucket, as the dialect's SQL computes it
	// (a change stream reads events without the database's help).
	BucketOf(aggregateType, aggregateID string) int
	// ReadEvents reads those of ids that are still ready, as ReadReady
	// does (ScanReadyEvents).
	ReadEvents(ctx context.Context, q Querier, ids []string) ([]Event, error)
	// ReadPredecessors reads the given events without locking them. now is
	// the database clock of the read, and may be zero when none was found
	// (no decision then depends on it); an event that does not exist is
	// absent from found (ScanPredecessors).
	ReadPredecessors(ctx context.Context, q Querier, keys []SeqKey) (now time.Time, found map[SeqKey]Predecessor, err error)
	// Hold moves unpublished events out of the claim range behind another
	// event, saying so in error_class and last_error.
	Hold(ctx context.Context, q Querier, ids []string, h Hold) error
}

// BucketDialect keeps the relays' membership and bucket leases
// (docs/design.md, section 4.1), on the database clock.
type BucketDialect interface {
	// Heartbeat records relayID as live until now + lease (forgetting
	// relays gone for long) and returns the live relays' ids, sorted
	// (ScanStrings).
	Heartbeat(ctx context.Context, q Querier, relayID string, lease time.Duration) (members []string, err error)
	// Leave deletes relayID's membership and frees its buckets.
	Leave(ctx context.Context, q Querier, relayID string) error
	// CreateBuckets adds the missing rows of buckets 0..n-1, free.
	CreateBuckets(ctx context.Context, q Querier, n int) error
	// ReadBuckets returns every bucket's row, by bucket
	// (ScanBucketLeases), and the clock.
	ReadBuckets(ctx context.Context, q Querier) (now time.Time, leases []BucketLease, err error)
	// AcquireBuckets gives relayID those of buckets that are free or whose
	// lease expired, with the epoch incremented and the lease renewed, in
	// one conditional statement.
	AcquireBuckets(ctx context.Context, q Querier, relayID string, buckets []int, lease time.Duration) error
	// RenewBuckets extends relayID's lease of those of buckets it owns.
	RenewBuckets(ctx context.Context, q Querier, relayID string, buckets []int, lease time.Duration) error
	// ReleaseBuckets frees those of buckets relayID owns.
	ReleaseBuckets(ctx context.Context, q Querier, relayID string, buckets []int) error
	// LockBuckets takes a share lock on relayID's rows among buckets (so no
	// acquire can change them until the transaction ends) and returns their
	// epochs (ScanEpochs).
	LockBuckets(ctx context.Context, q Querier, relayID string, buckets []int) (map[int]uint64, error)
}

// StreamLease is the change stream's row: its leader's lease and the
// checkpointed position (docs/design.md, section 9).
type StreamLease struct {
	// Leader is "" when nobody streams.
	Leader string
	Epoch  uint64
	// Expires is the leader's lease end (database clock).
	Expires time.Time
	// Position is the checkpoint ("" before the first); CheckpointedAt
	// when it was written.
	Position       string
	CheckpointedAt time.Time
	// Watermark is the stream's watermark: every untouched row with
	// next_attempt_at before it is published (docs/design.md, invariant
	// S2). Zero while no stream has set one.
	Watermark time.Time
}

// EventState is what the stream needs to know of an event it read.
type EventState struct {
	// Published: published (by a sweep, or a previous leader).
	Published bool
	// HandedOver: in the polling path's hands (error_class set,
	// quarantined or discarded).
	HandedOver bool
}

// StreamDialect keeps the change stream's lease and checkpoint, on the
// database clock (docs/design.md, section 9).
type StreamDialect interface {
	// ClaimStream makes relayID the leader if the lease is free or expired
	// (epoch + 1), or renews it if relayID holds it (same epoch), and
	// returns the row as it is then with the clock.
	ClaimStream(ctx context.Context, q Querier, relayID string, lease time.Duration) (StreamLease, time.Time, error)
	// ReadStream returns the row and the clock (ScanStreamLease), the
	// clock also before the row exists.
	ReadStream(ctx context.Context, q Querier) (StreamLease, time.Time, error)
	// ReleaseStream frees the lease if relayID holds it.
	ReleaseStream(ctx context.Context, q Querier, relayID string) error
	// SaveCheckpoint writes cp's position, and its watermark when set
	// (never moving the stored one back), where relayID holds the lease at
	// cp.Epoch, and says whether it did.
	SaveCheckpoint(ctx context.Context, q Querier, relayID string, cp Checkpoint) (bool, error)
	// SampleWatermark takes a watermark sample (docs/design.md, section
	// 9.3): At is a time such that every transaction that inserted a row
	// with next_attempt_at before it has ended, once Ended says so.
	SampleWatermark(ctx context.Context, q Querier) (WatermarkSample, error)
	// WatermarkEnded says whether every transaction a sample waits for has
	// ended.
	WatermarkEnded(ctx context.Context, q Querier, s WatermarkSample) (bool, error)
	// ReadStates reads the given events' states (ScanEventStates); an id
	// missing from the map has no row visible to the read.
	ReadStates(ctx context.Context, q Querier, ids []string) (map[string]EventState, error)
}

// WatermarkSample is a candidate watermark (docs/design.md, section 9.3).
type WatermarkSample struct {
	// At is the candidate, on the database clock.
	At time.Time
	// Wait is the dialect's token of the transactions to wait for (on
	// PostgreSQL the snapshot's xmax); 0 when none is needed.
	Wait uint64
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

// ReleaseUpdate is the new state of an event that was claimed but not
// sent: it waits as Hold says (Hold.Behind is not written: Message names
// it).
type ReleaseUpdate struct {
	EventID string
	// Hold is when it becomes claimable again.
	Hold Hold
	// Class and Message are its error_class and last_error; Message is
	// scrubbed and cut to LastErrorMaxLen characters.
	Class   string
	Message string
}

// SettleDialect records a batch's outcome. The core runs it in a
// transaction after LockBuckets, and names only events of buckets the
// relay still owns (docs/design.md, invariant F1); every update also
// requires the event unpublished and reports whether it touched it.
type SettleDialect interface {
	// MarkPublished sets published_at on the unpublished events of ids and
	// returns how many it marked.
	MarkPublished(ctx context.Context, q Querier, ids []string) (int, error)
	// Fail records a failed attempt: attempts + 1, a retry time or
	// quarantine, last_error and error_class.
	Fail(ctx context.Context, q Querier, f FailureUpdate) (bool, error)
	// LogFailure appends the failed attempt to the failure log.
	LogFailure(ctx context.Context, q Querier, f FailureUpdate, relayID string) error
	// Release gives back an event that was claimed but not sent:
	// next_attempt_at, error_class and last_error set as r says.
	Release(ctx context.Context, q Querier, r ReleaseUpdate) (bool, error)
}

// EventRow is one outbox row as operators see it.
type EventRow struct {
	Key           SeqKey
	ID            string
	EventType     string
	SchemaVersion int
	Payload       []byte
	// Headers is the stored JSON text, nil when NULL: decoded by the core
	// (RawEvent.Decode), so a row another writer got wrong can still be
	// shown and discarded.
	Headers       []byte
	Attempts      int
	ErrorClass    string
	LastError     string
	OccurredAt    time.Time
	NextAttemptAt time.Time
	// Forever: next_attempt_at is the dialect's "never".
	Forever       bool
	QuarantinedAt *time.Time
	PublishedAt   *time.Time
	DiscardedAt   *time.Time
}

// OperationsDialect serves the operators' tools: status, quarantine,
// replay and cleanup.
type OperationsDialect interface {
	// ListQuarantined returns quarantined (not discarded) events, oldest
	// quarantine first, with the count of later events held behind each
	// (ScanQuarantined).
	ListQuarantined(ctx context.Context, q Querier, f QuarantineFilter) ([]QuarantinedEvent, error)
	// ReadEvent reads one row (ScanEventRow); lock takes a row lock
	// (inside a transaction). A missing row is ErrEventNotFound.
	ReadEvent(ctx context.Context, q Querier, id string, lock bool) (EventRow, error)
	// ReadFailures returns an event's failure log, oldest first
	// (ScanFailures).
	ReadFailures(ctx context.Context, q Querier, id string) ([]FailureRecord, error)
	// ReadAudit returns the operator actions on an event, oldest first
	// (ScanAudit).
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

	// ReplayPage returns the published events w asks for, in
	// (aggregate_type, aggregate_id, aggregate_seq) order, walking
	// uq_aggregate_seq (ScanReplayEvents).
	ReplayPage(ctx context.Context, q Querier, w ReplayWindow) ([]Event, error)
	// LoadReplayCheckpoint reads a checkpoint as saved
	// (ScanReplayCheckpoint); found is false when there is none.
	LoadReplayCheckpoint(ctx context.Context, q Querier, name string) (cp ReplayCheckpoint, found bool, err error)
	// SaveReplayCheckpoint inserts or updates a checkpoint; selection is
	// cp.Selection's JSON, as ScanReplayCheckpoint reads it back.
	SaveReplayCheckpoint(ctx context.Context, q Querier, cp ReplayCheckpoint, selection []byte, finished bool) error

	// DeletePublished deletes up to limit published events with
	// published_at before cutoff, and returns how many it deleted.
	DeletePublished(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
	// DeleteStreamed deletes up to limit untouched rows (published by a
	// change stream without a write of their own, docs/design.md section
	// 9.2) whose next_attempt_at is before before, and returns how many it
	// deleted.
	DeleteStreamed(ctx context.Context, q Querier, before time.Time, limit int) (int64, error)
	// DeleteFailures deletes up to limit failure-log rows before cutoff
	// whose event is published, discarded or gone: the history of an event
	// still unpublished (quarantined, held, retrying) is kept.
	DeleteFailures(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
	// DeleteConsumed deletes up to limit inbox rows consumed before cutoff.
	DeleteConsumed(ctx context.Context, q Querier, cutoff time.Time, limit int) (int64, error)
}

// NewEvent is one row the outbox writer inserts. It carries no
// aggregate_seq and no next_attempt_at: the table's trigger (migration
// 00006, docs/design.md section 1) sets both, for this writer as for any
// other.
type NewEvent struct {
	ID            string
	AggregateType string
	AggregateID   string
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
	// InsertEvents inserts rows in the order given, in as few statements
	// as it can (MultiRowInsert). The table's trigger numbers each row in its aggregate and
	// locks the aggregate's counter until tx ends (docs/design.md,
	// invariant W1), row by row in that order.
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
