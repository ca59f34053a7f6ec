package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/internal/redact"
)

// LastErrorMaxLen is the most characters of last_error (and of the failure
// log's error).
const LastErrorMaxLen = 1000

// Settle records a batch's outcome in one transaction, fenced by the lease
// (docs/design.md, invariant F1): acknowledged events are marked published,
// failed ones back off or are quarantined (and logged), and events not sent
// are given back, held behind the failure before them or stopped by a
// configuration failure.
func (s *Store) Settle(ctx context.Context, lease Lease, out Outcome, policy OrderPolicy) (Settled, error) {
	var res Settled
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return res, fmt.Errorf("settle: begin: %w", err)
	}
	defer tx.Rollback()

	named := len(out.Published) + len(out.Failed) + len(out.Unsent)
	touched := 0
	if len(out.Published) > 0 {
		n, err := s.dialect.MarkPublished(ctx, tx, out.Published, lease)
		if err != nil {
			return res, fmt.Errorf("settle: mark %d published: %w", len(out.Published), err)
		}
		res.Published = n
		touched += n
	}

	if len(out.Failed) > 0 || len(out.Unsent) > 0 {
		// Retry times are the database clock's.
		now, err := s.dialect.Now(ctx, tx)
		if err != nil {
			return res, fmt.Errorf("settle: read clock: %w", err)
		}
		// What each failed event's successors wait for.
		holds := map[string]Hold{}
		for _, f := range out.Failed {
			u := FailureUpdate{
				EventID: f.EventID, Class: f.Class, Quarantine: f.Quarantine, At: now,
				Message: redact.Truncate(redact.Secrets(f.Message), LastErrorMaxLen),
			}
			if f.Quarantine {
				holds[f.EventID] = Hold{Forever: true, Behind: f.EventID}
			} else {
				u.RetryAt = now.Add(f.RetryAfter)
				holds[f.EventID] = Hold{Until: u.RetryAt, Behind: f.EventID}
			}
			ok, err := s.dialect.Fail(ctx, tx, u, lease)
			if err != nil {
				return res, fmt.Errorf("settle: record failure of %s: %w", f.EventID, err)
			}
			if !ok {
				continue // fenced off: the new owner's attempt is the one to log
			}
			touched++
			if f.Quarantine {
				res.Quarantined++
			}
			if err := s.dialect.LogFailure(ctx, tx, u, lease.RelayID); err != nil {
				return res, fmt.Errorf("settle: log failure of %s: %w", f.EventID, err)
			}
		}
		for _, u := range out.Unsent {
			ok, err := s.dialect.Release(ctx, tx, release(u, holds, now, policy), lease)
			if err != nil {
				return res, fmt.Errorf("settle: release %s: %w", u.EventID, err)
			}
			if ok {
				touched++
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("settle: commit: %w", err)
	}
	res.LostLeases = named - touched
	return res, nil
}

// release decides what an unsent event's row says once given back. One
// stopped by a configuration failure (Unsent.Class set: the relay's Kafka
// configuration, docs/security.md) is charged nothing: no attempt, no
// failure-log row, no backoff of its own (the relay backs off, not the
// event), never quarantined; its row says what stopped it. Any other waits
// for the event before it in the batch, as long as that one's retry (for
// ever behind a quarantine under OrderHold), or is ready at once when none
// failed before it (a shutdown gave it up).
func release(u Unsent, holds map[string]Hold, now time.Time, policy OrderPolicy) ReleaseUpdate {
	if u.Class != "" {
		return ReleaseUpdate{EventID: u.EventID, Hold: Hold{Until: now}, Class: u.Class,
			Message: redact.Truncate(redact.Secrets(u.Message), LastErrorMaxLen)}
	}
	h, ok := holds[u.Behind]
	if !ok || h.Forever && policy == OrderSkipQuarantined {
		h = Hold{Until: now}
	}
	h.Behind = u.Behind
	return ReleaseUpdate{EventID: u.EventID, Hold: h, Class: ErrorClassHeld, Message: HeldMessage(u.Behind)}
}
