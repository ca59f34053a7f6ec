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
	LockedBy    string
	ErrorClass  string
	LastError   string
	// NextAttemptAt is the lease expiry, retry time or park time.
	NextAttemptAt time.Time
}

// LoadOutbox reads every row of outbox_events in db.
func LoadOutbox(ctx context.Context, db *sql.DB) ([]Row, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq,
		published_at IS NOT NULL, quarantined_at IS NOT NULL, discarded_at IS NOT NULL, attempts,
		COALESCE(locked_by, ''), COALESCE(error_class, ''), COALESCE(last_error, ''), next_attempt_at
		FROM outbox_events`)
	if err != nil {
		return nil, fmt.Errorf("read outbox_events: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.ID, &r.AggregateType, &r.AggregateID, &r.Seq, &r.Published, &r.Quarantined,
			&r.Discarded, &r.Attempts, &r.LockedBy, &r.ErrorClass, &r.LastError, &r.NextAttemptAt); err != nil {
			return nil, fmt.Errorf("read outbox_events: %w", err)
		}
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
