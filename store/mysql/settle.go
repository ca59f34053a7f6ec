package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/internal/redact"
	"github.com/herald-outbox/herald/store"
)

// LastErrorMaxLen is the size of outbox_events.last_error.
const LastErrorMaxLen = 1000

// fence is the WHERE clause every update of a claimed row carries: the rows
// must still belong to this lease (docs/design.md, invariant F1).
const fence = ` AND locked_by = ? AND locked_at = ? AND published_at IS NULL`

// Settle records a batch's outcome in one transaction, fenced by the lease.
func (s *Store) Settle(ctx context.Context, lease store.Lease, out store.Outcome, policy store.OrderPolicy) (store.Settled, error) {
	var res store.Settled
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return res, fmt.Errorf("settle: begin: %w", err)
	}
	defer tx.Rollback()

	named := len(out.Published) + len(out.Failed) + len(out.Unsent)
	touched := 0
	if len(out.Published) > 0 {
		q := `UPDATE outbox_events SET published_at = NOW(6), last_error = NULL, error_class = NULL
		      WHERE id IN (` + placeholders(len(out.Published)) + `)` + fence
		args := append(anySlice(out.Published), lease.RelayID, lease.LockedAt)
		r, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return res, fmt.Errorf("settle: mark %d published: %w", len(out.Published), err)
		}
		n, _ := r.RowsAffected()
		res.Published = int(n)
		touched += int(n)
	}

	// Failures and releases need the database clock for their retry times.
	retryAt := map[string]time.Time{}
	if len(out.Failed) > 0 || len(out.Unsent) > 0 {
		var now time.Time
		if err := tx.QueryRowContext(ctx, "SELECT NOW(6)").Scan(&now); err != nil {
			return res, fmt.Errorf("settle: read clock: %w", err)
		}
		for _, f := range out.Failed {
			msg := redact.Truncate(redact.Secrets(f.Message), LastErrorMaxLen)
			var r sql.Result
			if f.Quarantine {
				retryAt[f.EventID] = store.Never
				r, err = tx.ExecContext(ctx, `UPDATE outbox_events
					SET quarantined_at = ?, next_attempt_at = ?, locked_by = NULL, locked_at = NULL,
					    last_error = ?, error_class = ?
					WHERE id = ?`+fence,
					now, store.Never, msg, f.Class, f.EventID, lease.RelayID, lease.LockedAt)
			} else {
				retryAt[f.EventID] = now.Add(f.RetryAfter)
				r, err = tx.ExecContext(ctx, `UPDATE outbox_events
					SET next_attempt_at = ?, locked_by = NULL, locked_at = NULL, last_error = ?, error_class = ?
					WHERE id = ?`+fence,
					now.Add(f.RetryAfter), msg, f.Class, f.EventID, lease.RelayID, lease.LockedAt)
			}
			if err != nil {
				return res, fmt.Errorf("settle: record failure of %s: %w", f.EventID, err)
			}
			n, _ := r.RowsAffected()
			touched += int(n)
			if n == 0 {
				continue // fenced off: the new owner's attempt is the one to log
			}
			if f.Quarantine {
				res.Quarantined++
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO outbox_failures
				(failed_at, event_id, relay_id, attempt, error_class, error, quarantined)
				SELECT ?, id, ?, attempts, ?, ?, ? FROM outbox_events WHERE id = ?`,
				now, lease.RelayID, f.Class, msg, f.Quarantine, f.EventID); err != nil {
				return res, fmt.Errorf("settle: log failure of %s: %w", f.EventID, err)
			}
		}
		for _, u := range out.Unsent {
			until, ok := retryAt[u.Behind]
			switch {
			case !ok:
				until = now
			case until == store.Never && policy == store.OrderSkipQuarantined:
				until = now
			}
			class, msg := ErrorClassHeld, "held behind event "+u.Behind+" of the same aggregate"
			if u.Class != "" {
				class, msg = u.Class, redact.Truncate(redact.Secrets(u.Message), LastErrorMaxLen)
			}
			// Not sent means not attempted: give the claim's attempt back.
			r, err := tx.ExecContext(ctx, `UPDATE outbox_events
				SET next_attempt_at = ?, attempts = GREATEST(attempts, 1) - 1, locked_by = NULL, locked_at = NULL,
				    error_class = ?, last_error = ?
				WHERE id = ?`+fence,
				until, class, msg, u.EventID, lease.RelayID, lease.LockedAt)
			if err != nil {
				return res, fmt.Errorf("settle: release %s: %w", u.EventID, err)
			}
			n, _ := r.RowsAffected()
			touched += int(n)
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("settle: commit: %w", err)
	}
	res.LostLeases = named - touched
	return res, nil
}
