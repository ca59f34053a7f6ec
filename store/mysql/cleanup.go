package mysql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Cleanup deletes, in primary-key batches with pauses, the outbox events
// that are published AND older than the retention (never an unpublished,
// quarantined or discarded one), their failure log, and inbox rows older
// than the inbox retention.
func (s *Store) Cleanup(ctx context.Context, req store.CleanupRequest) (store.CleanupReport, error) {
	var rep store.CleanupReport
	if err := req.Validate(); err != nil {
		return rep, err
	}
	var cutoff time.Time
	if err := s.db.QueryRowContext(ctx, "SELECT NOW(6) - INTERVAL ? MICROSECOND", req.Retention.Microseconds()).Scan(&cutoff); err != nil {
		return rep, fmt.Errorf("cleanup: read clock: %w", err)
	}
	// Published rows sort after NULL in idx_ready: this walks only them.
	events := batchDeleter{
		selectIDs: `SELECT id FROM outbox_events FORCE INDEX (idx_ready)
			WHERE published_at IS NOT NULL AND published_at < ? ORDER BY published_at LIMIT ?`,
		deleteIDs: `DELETE FROM outbox_events WHERE published_at IS NOT NULL AND published_at < ? AND id IN (%s)`,
	}
	if err := s.runBatches(ctx, req, events, cutoff, &rep, &rep.Events); err != nil {
		return rep, err
	}
	failures := batchDeleter{
		selectIDs: `SELECT id FROM outbox_failures WHERE failed_at < ? ORDER BY failed_at LIMIT ?`,
		deleteIDs: `DELETE FROM outbox_failures WHERE failed_at < ? AND id IN (%s)`,
	}
	if err := s.runBatches(ctx, req, failures, cutoff, &rep, &rep.Failures); err != nil {
		return rep, err
	}
	if req.InboxRetention > 0 {
		var inboxCutoff time.Time
		if err := s.db.QueryRowContext(ctx, "SELECT NOW(6) - INTERVAL ? MICROSECOND", req.InboxRetention.Microseconds()).Scan(&inboxCutoff); err != nil {
			return rep, fmt.Errorf("cleanup: read clock: %w", err)
		}
		inbox := batchDeleter{
			selectIDs: `SELECT consumer_name, event_id FROM consumed_events
				WHERE consumed_at < ? ORDER BY consumed_at LIMIT ?`,
			deleteIDs:  `DELETE FROM consumed_events WHERE consumed_at < ? AND (consumer_name, event_id) IN (%s)`,
			keyColumns: 2,
		}
		if err := s.runBatches(ctx, req, inbox, inboxCutoff, &rep, &rep.Inbox); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// batchDeleter deletes by primary key: select a batch of keys, then delete
// exactly those (rechecking the cutoff).
type batchDeleter struct {
	selectIDs  string // args: cutoff, limit; returns keyColumns columns
	deleteIDs  string // %s: key placeholders; args: cutoff, keys...
	keyColumns int    // columns of the primary key; 0 means 1
}

func (s *Store) runBatches(ctx context.Context, req store.CleanupRequest, d batchDeleter, cutoff time.Time, rep *store.CleanupReport, total *int64) error {
	for batches := 0; req.MaxBatches == 0 || batches < req.MaxBatches; batches++ {
		cols := max(d.keyColumns, 1)
		keys, err := s.selectStrings(ctx, cols, d.selectIDs, cutoff, req.BatchSize)
		if err != nil {
			return fmt.Errorf("cleanup: select batch: %w", err)
		}
		rowsSelected := len(keys) / cols
		if rowsSelected == 0 {
			return nil
		}
		marks := placeholders(rowsSelected)
		if cols > 1 {
			tuple := "(" + placeholders(cols) + ")"
			marks = strings.TrimSuffix(strings.Repeat(tuple+", ", rowsSelected), ", ")
		}
		args := append([]any{cutoff}, anySlice(keys)...)
		res, err := s.db.ExecContext(ctx, fmt.Sprintf(d.deleteIDs, marks), args...)
		if err != nil {
			return fmt.Errorf("cleanup: delete batch: %w", err)
		}
		n, _ := res.RowsAffected()
		*total += n
		rep.Batches++
		rep.LargestBatch = max(rep.LargestBatch, n)
		if rowsSelected < req.BatchSize {
			return nil
		}
		if req.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(req.Pause):
			}
		}
	}
	return nil
}

// selectStrings returns the cols string columns of every row, flattened.
func (s *Store) selectStrings(ctx context.Context, cols int, q string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	vals := make([]string, cols)
	ptrs := make([]any, cols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	return out, rows.Err()
}
