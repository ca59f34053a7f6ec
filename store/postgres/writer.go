package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/herald-outbox/herald/store"
)

// insertChunkRows and insertChunkBytes bound one INSERT statement: 500 rows
// of 9 parameters stay far inside PostgreSQL's 65,535 parameters, and a few
// MiB keep one message to the server small.
const (
	insertChunkRows  = 500
	insertChunkBytes = 4 << 20
)

// ReserveSequences implements store.WriterDialect with one round trip.
// INSERT ... ON CONFLICT DO UPDATE either creates the counter or adds n to
// the committed one, atomically even at READ COMMITTED, and RETURNING hands
// the new value back; the row stays locked until tx ends, so the next
// writer of the aggregate reads the counter this one committed (W1). At
// REPEATABLE READ or SERIALIZABLE, a counter another transaction committed
// since tx's snapshot fails with 40001, which IsTransient reports: the
// caller retries its transaction.
func (Dialect) ReserveSequences(ctx context.Context, tx *sql.Tx, aggregateType, aggregateID string, n uint64) (uint64, error) {
	var last int64
	err := tx.QueryRowContext(ctx,
		`INSERT INTO outbox_aggregates AS a (aggregate_type, aggregate_id, last_seq) VALUES ($1, $2, $3)
		 ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_seq = a.last_seq + EXCLUDED.last_seq
		 RETURNING a.last_seq`,
		aggregateType, aggregateID, int64(n)).Scan(&last)
	if err != nil {
		return 0, err
	}
	return uint64(last) - n + 1, nil
}

// InsertEvents implements store.WriterDialect with multi-row INSERTs of
// scalar parameters (any driver's transaction can run them).
// next_attempt_at is statement_timestamp() and occurred_at a timestamptz
// parameter, so the caller's session TimeZone changes nothing.
func (Dialect) InsertEvents(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	const head = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq,
		event_type, schema_version, payload, headers, occurred_at, next_attempt_at) VALUES `
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
			n := len(args)
			fmt.Fprintf(&q, "($%d::uuid, $%d, $%d, $%d, $%d, $%d, $%d::json, $%d::jsonb, $%d::timestamptz, statement_timestamp())",
				n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9)
			var headers any
			if r.Headers != nil {
				headers = string(r.Headers)
			}
			args = append(args, r.ID, r.Key.AggregateType, r.Key.AggregateID, int64(r.Key.Seq),
				r.EventType, int32(r.SchemaVersion), string(r.Payload), headers, r.OccurredAt.UTC())
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %d event(s): %w", end-start, err)
		}
		start = end
	}
	return nil
}
