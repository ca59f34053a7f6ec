package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// MultiRowInsert is a dialect's INSERT of outbox rows, several rows a
// statement: the dialect spells the statement, the core cuts the rows
// into statements, in the order given (the table's trigger numbers them
// in that order, invariant W1).
type MultiRowInsert struct {
	// Head is the statement up to and including VALUES.
	Head string
	// Row returns one row's tuple and its arguments; the tuple's
	// placeholders are numbered from first (1 for a statement's first
	// row), for a dialect that numbers them.
	Row func(r NewEvent, first int) (tuple string, args []any)
	// MaxRows and MaxBytes bound one statement: at most MaxRows rows, and
	// no more than MaxBytes of payload unless one row alone has more.
	MaxRows, MaxBytes int
}

// Exec inserts rows in tx, in as few statements as the bounds allow.
func (m MultiRowInsert) Exec(ctx context.Context, tx *sql.Tx, rows []NewEvent) error {
	for start := 0; start < len(rows); {
		end, size := start, 0
		for end < len(rows) && end-start < m.MaxRows && (end == start || size+len(rows[end].Payload) <= m.MaxBytes) {
			size += len(rows[end].Payload)
			end++
		}
		var q strings.Builder
		q.WriteString(m.Head)
		var args []any
		for i, r := range rows[start:end] {
			if i > 0 {
				q.WriteString(", ")
			}
			tuple, rowArgs := m.Row(r, len(args)+1)
			q.WriteString(tuple)
			args = append(args, rowArgs...)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("insert %d event(s): %w", end-start, err)
		}
		start = end
	}
	return nil
}
