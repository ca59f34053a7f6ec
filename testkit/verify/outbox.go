package verify

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Row is an outbox_events row's identity and state, read with plain SQL.
type Row struct {
	Event
	Published   bool
	Quarantined bool
	Discarded   bool
	Attempts    uint32
	ErrorClass  string
	LastError   string
	// NextAttemptAt is the lease expiry, retry time or park time; zero when
	// Never.
	NextAttemptAt time.Time
	// Never: next_attempt_at is the dialect's "never" (MySQL's 9999-12-31,
	// PostgreSQL's 'infinity').
	Never bool
}

// PublishedSQL is an outbox_events row's published state in SQL both
// databases speak: marked, or, published by a change stream without a
// write, untouched below the stream's watermark (docs/design.md, section
// 9.3). The verifier's own, so that it does not take the store's word for
// it; the drills read it too.
const PublishedSQL = `(published_at IS NOT NULL OR COALESCE(error_class IS NULL AND quarantined_at IS NULL
	AND discarded_at IS NULL AND next_attempt_at < (SELECT watermark FROM outbox_stream WHERE id = 1), FALSE))`

// LoadOutbox reads every row of outbox_events in db, MySQL/MariaDB or
// PostgreSQL: the statement is written in SQL both speak, and any
// next_attempt_at past the year 9000 is a dialect's "never".
func LoadOutbox(ctx context.Context, db *sql.DB) ([]Row, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq,
		`+PublishedSQL+`, quarantined_at IS NOT NULL, discarded_at IS NOT NULL, attempts,
		COALESCE(error_class, ''), COALESCE(last_error, ''),
		CASE WHEN next_attempt_at < '9000-01-01' THEN next_attempt_at END
		FROM outbox_events`)
	if err != nil {
		return nil, fmt.Errorf("read outbox_events: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		var next sql.NullTime
		if err := rows.Scan(&r.ID, &r.AggregateType, &r.AggregateID, &r.Seq, &r.Published, &r.Quarantined,
			&r.Discarded, &r.Attempts, &r.ErrorClass, &r.LastError, &next); err != nil {
			return nil, fmt.Errorf("read outbox_events: %w", err)
		}
		r.NextAttemptAt, r.Never = next.Time, !next.Valid
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox_events: %w", err)
	}
	return out, nil
}

// Events returns the events of rows for which keep is true (every row when
// keep is nil).
func Events(rows []Row, keep func(Row) bool) []Event {
	var out []Event
	for _, r := range rows {
		if keep == nil || keep(r) {
			out = append(out, r.Event)
		}
	}
	return out
}
