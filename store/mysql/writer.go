package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/herald-outbox/herald/store"
)

// insertChunkRows and insertChunkBytes bound one INSERT statement, well
// inside the placeholder limit and the server's max_allowed_packet.
const (
	insertChunkRows  = 500
	insertChunkBytes = 4 << 20
)

// InsertEvents implements store.WriterDialect with multi-row INSERTs of
// the SQL contract's columns (docs/writers.md), as any writer issues them.
// The table's trigger fills aggregate_seq (W1: it upserts the aggregate's
// counter row, locked until tx ends) and next_attempt_at (the database's
// UTC clock) for each row, in the order of the VALUES list; occurred_at
// is UTC text, so the caller's session time zone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	const head = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id,
		event_type, schema_version, payload, headers, occurred_at) VALUES `
	const values = "(?, ?, ?, ?, ?, ?, ?, ?)"
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
			q.WriteString(values)
			var headers any
			if r.Headers != nil {
				headers = string(r.Headers)
			}
			args = append(args, r.ID, r.AggregateType, r.AggregateID,
				r.EventType, r.SchemaVersion, string(r.Payload), headers, datetime(r.OccurredAt))
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %d event(s): %w", end-start, err)
		}
		start = end
	}
	return nil
}
