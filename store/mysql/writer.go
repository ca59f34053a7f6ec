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

// ReserveSequences implements store.WriterDialect with one round trip:
// LAST_INSERT_ID(expr) hands the new counter back in the OK packet whether
// the counter row is new or not, and the row stays locked until tx ends.
func (Dialect) ReserveSequences(ctx context.Context, tx *sql.Tx, aggregateType, aggregateID string, n uint64) (uint64, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO outbox_aggregates (aggregate_type, aggregate_id, last_seq)
		 VALUES (?, ?, LAST_INSERT_ID(?))
		 ON DUPLICATE KEY UPDATE last_seq = LAST_INSERT_ID(last_seq + ?)`,
		aggregateType, aggregateID, n, n)
	if err != nil {
		return 0, err
	}
	last, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return uint64(last) - n + 1, nil
}

// InsertEvents implements store.WriterDialect with multi-row INSERTs.
// next_attempt_at is UTC_TIMESTAMP(6) and occurred_at is UTC text, so the
// caller's session time zone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	const head = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
		event_type, schema_version, payload, headers, occurred_at, next_attempt_at) VALUES `
	const values = "(?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))"
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < insertChunkRows && (end == start || size+len(rows[end].Payload) <= insertChunkBytes) {
			size += len(rows[end].Payload)
			end++
		}
		var q strings.Builder
		q.WriteString(head)
		args := make([]any, 0, (end-start)*9)
		for i, r := range rows[start:end] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(values)
			var headers any
			if r.Headers != nil {
				headers = string(r.Headers)
			}
			args = append(args, r.ID, r.Key.AggregateType, r.Key.AggregateID, r.Key.Seq,
				r.EventType, r.SchemaVersion, string(r.Payload), headers, datetime(r.OccurredAt))
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %d event(s): %w", end-start, err)
		}
		start = end
	}
	return nil
}
