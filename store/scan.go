package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Scanners of the rows both dialects read alike. A dialect keeps its SQL
// and hands its rows here: the columns come in the order each scanner
// names, times (timestamps, in the database's UTC) come back in UTC
// whatever the driver's location, and a next_attempt_at that may be the
// dialect's "never" comes as NULL for it (a dialect's SQL maps "never" to
// NULL, so no Go below the core compares times with it).

// UTC scans a nullable time into t, in UTC; NULL is the zero time.
func UTC(t *time.Time) sql.Scanner { return utcTime{t} }

type utcTime struct{ t *time.Time }

func (u utcTime) Scan(v any) error {
	var n sql.NullTime
	if err := n.Scan(v); err != nil {
		return err
	}
	*u.t = time.Time{}
	if n.Valid {
		*u.t = n.Time.UTC()
	}
	return nil
}

// utcPtr scans a nullable time into *t, in UTC; NULL is nil.
func utcPtr(t **time.Time) sql.Scanner { return utcPointer{t} }

type utcPointer struct{ t **time.Time }

func (u utcPointer) Scan(v any) error {
	var n sql.NullTime
	if err := n.Scan(v); err != nil {
		return err
	}
	*u.t = nil
	if n.Valid {
		at := n.Time.UTC()
		*u.t = &at
	}
	return nil
}

// forever scans a next_attempt_at that is NULL for the dialect's "never":
// at is the time (zero for never), never says which.
func forever(at *time.Time, never *bool) sql.Scanner { return foreverTime{at, never} }

type foreverTime struct {
	at    *time.Time
	never *bool
}

func (f foreverTime) Scan(v any) error {
	*f.never = v == nil
	return utcTime{f.at}.Scan(v)
}

// eachRow calls scan on every row of rows and closes rows; err is the
// error of the query that made rows.
func eachRow(rows *sql.Rows, err error, scan func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// scanAll reads every row of rows into a value with scan, closes rows and
// returns the values; err is the error of the query that made rows.
func scanAll[T any](rows *sql.Rows, err error, scan func(*sql.Rows, *T) error) ([]T, error) {
	var out []T
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var v T
		err := scan(rows, &v)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanMap reads every row of rows with scan into a map, closes rows and
// returns the map (empty, not nil, when there is no row); err is the
// error of the query that made rows.
func scanMap[K comparable, V any](rows *sql.Rows, err error, scan func(*sql.Rows, *K, *V) error) (map[K]V, error) {
	out := map[K]V{}
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var k K
		var v V
		err := scan(rows, &k, &v)
		out[k] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RowsAffected returns a statement's affected rows; err is the
// statement's error.
func RowsAffected(r sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("rows affected: %w", err)
	}
	return n, nil
}

// TextOrNull is b as a text argument, nil (NULL) when b is nil: a JSON
// column's value as the caller gave it.
func TextOrNull(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// ScanReadyEvents reads the rows of a claim's read (id, aggregate type,
// aggregate id, aggregate seq, event type, schema version, payload,
// headers, fields, occurred_at, attempts, error class or empty, bucket,
// next_attempt_at), each decoded (RawEvent.Decode), and closes rows. last
// is the claim order's position of the last row (zero when none).
func ScanReadyEvents(rows *sql.Rows, err error) (events []Event, last ReadyCursor, _ error) {
	events, err = scanAll(rows, err, func(rows *sql.Rows, e *Event) error {
		var (
			raw       RawEvent
			occurred  time.Time
			attempts  uint32
			prevClass string
			bucket    int
		)
		// Scanned as stored and decoded in Go: a row another writer got
		// wrong is an event with a defect, not a failed claim.
		if err := rows.Scan(&raw.ID, &raw.AggregateType, &raw.AggregateID, &raw.AggregateSeq, &raw.EventType, &raw.SchemaVersion,
			&raw.Payload, &raw.Headers, &raw.Fields, UTC(&occurred), &attempts, &prevClass, &bucket,
			UTC(&last.NextAttemptAt)); err != nil {
			return err
		}
		*e = raw.Decode()
		e.OccurredAt, e.Attempts, e.PreviousErrorClass, e.Bucket = occurred, attempts, prevClass, bucket
		last.OccurredAt, last.ID = e.OccurredAt, e.ID
		return nil
	})
	if err != nil {
		return nil, ReadyCursor{}, err
	}
	return events, last, nil
}

// ScanPredecessors reads the rows of a predecessors' read (the database's
// now, aggregate type, aggregate id, aggregate seq, id, done, quarantined,
// next_attempt_at or NULL for never, untouched) by key, and closes rows.
// now is zero when no row was found: no decision then depends on it.
func ScanPredecessors(rows *sql.Rows, err error) (time.Time, map[SeqKey]Predecessor, error) {
	var now time.Time
	found, err := scanMap(rows, err, func(rows *sql.Rows, k *SeqKey, p *Predecessor) error {
		return rows.Scan(UTC(&now), &k.AggregateType, &k.AggregateID, &k.Seq, &p.ID, &p.Done, &p.Quarantined,
			forever(&p.NextAttempt, &p.Forever), &p.Untouched)
	})
	if err != nil {
		return time.Time{}, nil, err
	}
	return now, found, nil
}

// eventRowColumns scans the columns an operator's row begins with (id,
// aggregate type, aggregate id, aggregate seq, event type, schema version,
// attempts, error class or empty, last error or empty, occurred_at,
// quarantined_at, published_at, discarded_at, next_attempt_at or NULL for
// never) into r, with more after them.
func eventRowColumns(r *EventRow, more ...any) []any {
	return append([]any{&r.ID, &r.Key.AggregateType, &r.Key.AggregateID, &r.Key.Seq, &r.EventType, &r.SchemaVersion,
		&r.Attempts, &r.ErrorClass, &r.LastError, UTC(&r.OccurredAt), utcPtr(&r.QuarantinedAt), utcPtr(&r.PublishedAt),
		utcPtr(&r.DiscardedAt), forever(&r.NextAttemptAt, &r.Forever)}, more...)
}

// ScanEventRows reads the rows of a list's read (the columns of an
// operator's row, see ScanEventRow, without payload and headers) and
// closes rows.
func ScanEventRows(rows *sql.Rows, err error) ([]EventRow, error) {
	return scanAll(rows, err, func(rows *sql.Rows, r *EventRow) error {
		return rows.Scan(eventRowColumns(r)...)
	})
}

// ScanEventRow reads the row of one event's read (id, aggregate type,
// aggregate id, aggregate seq, event type, schema version, attempts, error
// class or empty, last error or empty, occurred_at, quarantined_at,
// published_at, discarded_at, next_attempt_at or NULL for never, payload,
// headers). No row is ErrEventNotFound.
func ScanEventRow(row *sql.Row) (EventRow, error) {
	var r EventRow
	err := row.Scan(eventRowColumns(&r, &r.Payload, &r.Headers)...)
	if errors.Is(err, sql.ErrNoRows) {
		return EventRow{}, ErrEventNotFound
	}
	return r, err
}

// ScanQuarantined reads the rows of the quarantine list (id, aggregate
// type, aggregate id, aggregate seq, event type, attempts, error class,
// last error, occurred_at, quarantined_at, the count of events held
// behind) and closes rows.
func ScanQuarantined(rows *sql.Rows, err error) ([]QuarantinedEvent, error) {
	return scanAll(rows, err, func(rows *sql.Rows, e *QuarantinedEvent) error {
		return rows.Scan(&e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq, &e.EventType, &e.Attempts,
			&e.ErrorClass, &e.LastError, UTC(&e.OccurredAt), UTC(&e.QuarantinedAt), &e.HeldBehind)
	})
}

// ScanFailures reads the rows of an event's failure log (failed_at, relay
// id, attempt, error class, error, quarantined) and closes rows.
func ScanFailures(rows *sql.Rows, err error) ([]FailureRecord, error) {
	return scanAll(rows, err, func(rows *sql.Rows, f *FailureRecord) error {
		return rows.Scan(UTC(&f.At), &f.RelayID, &f.Attempt, &f.ErrorClass, &f.Error, &f.Quarantined)
	})
}

// auditColumns scans an audit record's columns (at, actor, action, event
// id or empty, reason or empty, details or NULL) into a, the details'
// text into details.
func auditColumns(a *AuditRecord, details *[]byte) []any {
	return []any{UTC(&a.At), &a.Actor, &a.Action, &a.EventID, &a.Reason, details}
}

func (a *AuditRecord) setDetails(details []byte) {
	if details != nil {
		a.Details = json.RawMessage(details)
	}
}

// ScanAudit reads the rows of an event's audit trail (at, actor, action,
// event id or empty, reason or empty, details or NULL) and closes rows.
func ScanAudit(rows *sql.Rows, err error) ([]AuditRecord, error) {
	return scanAll(rows, err, func(rows *sql.Rows, a *AuditRecord) error {
		var details []byte
		err := rows.Scan(auditColumns(a, &details)...)
		a.setDetails(details)
		return err
	})
}

// ScanAuditEntries reads the rows of a dialect's ReadAuditLog query (id,
// then an audit record's columns as ScanAudit reads them) and closes
// rows.
func ScanAuditEntries(rows *sql.Rows, err error) ([]AuditEntry, error) {
	return scanAll(rows, err, func(rows *sql.Rows, a *AuditEntry) error {
		var details []byte
		err := rows.Scan(append([]any{&a.ID}, auditColumns(&a.AuditRecord, &details)...)...)
		a.setDetails(details)
		return err
	})
}

// ScanReplayEvents reads the rows of a replay page (id, aggregate type,
// aggregate id, aggregate seq, event type, schema version, payload,
// headers, fields, occurred_at) and closes rows. A row that does not
// decode stops the page: a replay re-publishes only what was published.
func ScanReplayEvents(rows *sql.Rows, err error) ([]Event, error) {
	return scanAll(rows, err, func(rows *sql.Rows, e *Event) error {
		var raw RawEvent
		var occurred time.Time
		if err := rows.Scan(&raw.ID, &raw.AggregateType, &raw.AggregateID, &raw.AggregateSeq, &raw.EventType,
			&raw.SchemaVersion, &raw.Payload, &raw.Headers, &raw.Fields, UTC(&occurred)); err != nil {
			return err
		}
		*e = raw.Decode()
		if e.Defect != nil {
			return fmt.Errorf("event %s: %w", e.ID, e.Defect)
		}
		e.OccurredAt = occurred
		return nil
	})
}

// ScanReplayCheckpoint reads the row of the checkpoint called name
// (selection, position type, position id, position seq, replayed,
// finished_at); found is false when there is none.
func ScanReplayCheckpoint(row *sql.Row, name string) (cp ReplayCheckpoint, found bool, err error) {
	cp = ReplayCheckpoint{Name: name}
	var selection []byte
	var finished time.Time
	err = row.Scan(&selection, &cp.Position.AggregateType, &cp.Position.AggregateID, &cp.Position.AggregateSeq,
		&cp.Replayed, UTC(&finished))
	if errors.Is(err, sql.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, err
	}
	if err := json.Unmarshal(selection, &cp.Selection); err != nil {
		return cp, false, fmt.Errorf("selection: %w", err)
	}
	cp.Finished = !finished.IsZero()
	return cp, true, nil
}

// ScanReplayProgress reads the rows of a dialect's ListReplayCheckpoints
// query (name, selection, replayed, finished, updated_at) and closes rows.
func ScanReplayProgress(rows *sql.Rows, err error) ([]ReplayProgress, error) {
	return scanAll(rows, err, func(rows *sql.Rows, p *ReplayProgress) error {
		var sel []byte
		if err := rows.Scan(&p.Name, &sel, &p.Replayed, &p.Finished, UTC(&p.UpdatedAt)); err != nil {
			return err
		}
		return json.Unmarshal(sel, &p.Selection)
	})
}

// ScanDelays reads rows of one column of microseconds (a dialect's
// ReadDeliveryDelays query) as durations, none below zero, and closes
// rows.
func ScanDelays(rows *sql.Rows, err error) ([]time.Duration, error) {
	return scanAll(rows, err, func(rows *sql.Rows, d *time.Duration) error {
		var us int64
		err := rows.Scan(&us)
		*d = max(time.Duration(us)*time.Microsecond, 0)
		return err
	})
}

// ScanStrings reads rows of one text column (the live relays' ids) and
// closes rows.
func ScanStrings(rows *sql.Rows, err error) ([]string, error) {
	return scanAll(rows, err, func(rows *sql.Rows, s *string) error {
		return rows.Scan(s)
	})
}

// ScanBucketLeases reads the rows of the bucket table (bucket, owner or
// empty, epoch, expires_at) and closes rows.
func ScanBucketLeases(rows *sql.Rows, err error) ([]BucketLease, error) {
	return scanAll(rows, err, func(rows *sql.Rows, l *BucketLease) error {
		return rows.Scan(&l.Bucket, &l.Owner, &l.Epoch, UTC(&l.Expires))
	})
}

// ScanEpochs reads rows of (bucket, epoch) by bucket and closes rows.
func ScanEpochs(rows *sql.Rows, err error) (map[int]uint64, error) {
	return scanMap(rows, err, func(rows *sql.Rows, b *int, epoch *uint64) error {
		return rows.Scan(b, epoch)
	})
}

// ScanStreamLease reads the row of a dialect's ReadStream query (the
// database's now, leader, epoch, expires_at, position, checkpointed_at,
// watermark), NULL leader, position and times read as empty.
func ScanStreamLease(row *sql.Row) (StreamLease, time.Time, error) {
	var (
		l                StreamLease
		now              time.Time
		leader, position sql.NullString
	)
	if err := row.Scan(UTC(&now), &leader, &l.Epoch, UTC(&l.Expires), &position, UTC(&l.CheckpointedAt), UTC(&l.Watermark)); err != nil {
		return StreamLease{}, time.Time{}, err
	}
	l.Leader, l.Position = leader.String, position.String
	return l, now, nil
}

// ScanEventStates reads the rows of a dialect's ReadStates query (id,
// published, handed over) into their states by id, and closes rows.
func ScanEventStates(rows *sql.Rows, err error) (map[string]EventState, error) {
	return scanMap(rows, err, func(rows *sql.Rows, id *string, st *EventState) error {
		return rows.Scan(id, &st.Published, &st.HandedOver)
	})
}
