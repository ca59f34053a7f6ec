package mysql

import (
	"context"
	"database/sql"

	"github.com/herald-outbox/herald/store"
)

// insertEvents is the multi-row INSERT of the SQL contract's columns
// (docs/writers.md), as any writer issues it. A statement stays well
// inside the placeholder limit and the server's max_allowed_packet.
var insertEvents = store.MultiRowInsert{
	Head: `INSERT INTO outbox_events (id, aggregate_type, aggregate_id,
		event_type, schema_version, payload, headers, occurred_at) VALUES `,
	Row: func(r store.NewEvent, _ int) (string, []any) {
		return "(?, ?, ?, ?, ?, ?, ?, ?)", []any{r.ID, r.AggregateType, r.AggregateID,
			r.EventType, r.SchemaVersion, string(r.Payload), store.TextOrNull(r.Headers), datetime(r.OccurredAt)}
	},
	MaxRows:  500,
	MaxBytes: 4 << 20,
}

// InsertEvents implements store.WriterDialect. The table's trigger fills
// aggregate_seq (W1: it upserts the aggregate's counter row, locked until
// tx ends) and next_attempt_at (the database's UTC clock) for each row, in
// the order of the VALUES list; occurred_at is UTC text, so the caller's
// session time zone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	return insertEvents.Exec(ctx, tx, rows)
}
