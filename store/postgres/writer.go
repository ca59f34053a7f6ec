package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/herald-outbox/herald/store"
)

// insertEvents is the multi-row INSERT of the SQL contract's columns
// (docs/writers.md) in scalar parameters, so any driver's transaction can
// run it. 500 rows of 8 parameters stay far inside PostgreSQL's 65,535
// parameters, and a few MiB keep one message to the server small.
var insertEvents = store.MultiRowInsert{
	Head: `INSERT INTO outbox_events (id, aggregate_type, aggregate_id,
		event_type, schema_version, payload, headers, occurred_at) VALUES `,
	Row: func(r store.NewEvent, n int) (string, []any) {
		return fmt.Sprintf("($%d::uuid, $%d, $%d, $%d, $%d, $%d::json, $%d::jsonb, $%d::timestamptz)",
				n, n+1, n+2, n+3, n+4, n+5, n+6, n+7),
			[]any{r.ID, r.AggregateType, r.AggregateID, r.EventType, int32(r.SchemaVersion), string(r.Payload),
				store.TextOrNull(r.Headers), r.OccurredAt.UTC()}
	},
	MaxRows:  500,
	MaxBytes: 4 << 20,
}

// InsertEvents implements store.WriterDialect. The table's trigger fills
// aggregate_seq (W1: INSERT ... ON CONFLICT DO UPDATE of the aggregate's
// counter, atomic even at READ COMMITTED and locked until tx ends; at
// REPEATABLE READ or SERIALIZABLE a counter another transaction committed
// since tx's snapshot fails with 40001, which IsTransient reports: the
// caller retries its transaction) and next_attempt_at (clock_timestamp())
// for each row, in the order of the VALUES list. occurred_at is a
// timestamptz parameter, so the caller's session TimeZone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	return insertEvents.Exec(ctx, tx, rows)
}
