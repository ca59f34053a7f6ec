package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/herald-outbox/herald/store"
)

// insertChunkRows and insertChunkBytes bound one INSERT statement: 500 rows
// of 8 parameters stay far inside PostgreSQL's 65,535 parameters, and a few
// MiB keep one message to the server small.
const (
	insertChunkRows  = 500
	insertChunkBytes = 4 << 20
)

// InsertEvents implements store.WriterDialect with multi-row INSERTs of the
// SQL contract's columns (docs/writers.md) in scalar parameters, so any
// driver's transaction can run them. The table's trigger fills
// aggregate_seq (W1: INSERT ... ON CONFLICT DO UPDATE of the aggregate's
// counter, atomic even at READ COMMITTED and locked until tx ends; at
// REPEATABLE READ or SERIALIZABLE a counter another transaction committed
// since tx's snapshot fails with 40001, which IsTransient reports: the
// caller retries its transaction) and next_attempt_at (clock_timestamp())
// for each row, in the order of the VALUES list. occurred_at is a
// timestamptz parameter, so the caller's session TimeZone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	const head = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id,
		event_type, schema_version, payload, headers, occurred_at) VALUES `
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < insertChunkRows && (end == start || size+len(rows[end].Payload) <= insertChunkBytes) {
			size += len(rows[end].Payload)
			end++
		}
		var q strings.Builder
		q.WriteString(head)
		args := make([]any, 0, (end-start)*8)
		for i, r := range rows[start:end] {
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d::uuid, $%d, $%d, $%d, $%d, $%d::json, $%d::jsonb, $%d::timestamptz)",
				n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8)
			var headers any
			if r.Headers != nil {
				headers = string(r.Headers)
			}
			args = append(args, r.ID, r.AggregateType, r.AggregateID,
				r.EventType, int32(r.SchemaVersion), string(r.Payload), headers, r.OccurredAt.UTC())
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %d event(s): %w", end-start, err)
		}
		start = end
	}
	return nil
}
