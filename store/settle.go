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

// Settle records a claimed batch's outcome in one transaction, fenced by
// the buckets the claim was made under (docs/design.md, invariant F1):
// acknowledged events are marked published (those of a change stream's
// claim are published by the checkpoint instead, and left untouched),
// failed ones back off or are
// quarantined (and logged), and events not sent are given back, held behind
// the failure before them. Events of buckets the relay lost are left alone
// and counted in LostLeases.
func (s *Store) Settle(ctx context.Context, c Claim, out Outcome, policy OrderPolicy) (Settled, error) {
	var res Settled
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return res, fmt.Errorf("settle: begin: %w", err)
	}
	defer tx.Rollback()

	bucketOf := make(map[string]int, len(c.Events))
	keyOf := make(map[string]SeqKey, len(c.Events))
	for _, e := range c.Events {
		bucketOf[e.ID] = e.Bucket
		keyOf[e.ID] = SeqKey{e.AggregateType, e.AggregateID, e.AggregateSeq}
	}
	owned, err := s.lockOwned(ctx, tx, c.Ownership, bucketOf)
	if err != nil {
		return res, fmt.Errorf("settle: %w", err)
	}

	named := len(out.Published) + len(out.Failed) + len(out.Unsent)
	touched := 0
	var published []string
	for _, id := range out.Published {
		if owned(id) {
			published = append(published, id)
		}
	}
	if len(published) > 0 && c.streamed {
		// Published by the checkpoint that follows them: the row stays
		// untouched (docs/design.md, section 9.2).
		res.Published = len(published)
		touched += len(published)
	} else if len(published) > 0 {
		n, err := s.dialect.MarkPublished(ctx, tx, published)
		if err != nil {
			return res, fmt.Errorf("settle: mark %d published: %w", len(published), err)
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
			if !owned(f.EventID) {
				continue // fenced off: the new owner's attempt is the one to log
			}
			ok, err := s.dialect.Fail(ctx, tx, u)
			if err != nil {
				return res, fmt.Errorf("settle: record failure of %s: %w", f.EventID, err)
			}
			if !ok {
				continue
			}
			touched++
			if f.Quarantine {
				res.Quarantined++
			}
			if err := s.dialect.LogFailure(ctx, tx, u, c.Ownership.RelayID); err != nil {
				return res, fmt.Errorf("settle: log failure of %s: %w", f.EventID, err)
			}
		}
		for _, u := range out.Unsent {
			if !owned(u.EventID) {
				continue
			}
			r, write := release(u, holds, now, policy)
			if !write {
				touched++ // given up unsent (shutdown): a claim wrote nothing, so nothing to undo
				continue
			}
			ok, err := s.dialect.Release(ctx, tx, r)
			if err != nil {
				return res, fmt.Errorf("settle: release %s: %w", u.EventID, err)
			}
			if ok {
				touched++
			}
		}
	}
	if cp := out.Checkpoint; cp != nil {
		ok, err := s.dialect.SaveCheckpoint(ctx, tx, c.Ownership.RelayID, *cp)
		if err != nil {
			return res, fmt.Errorf("settle: checkpoint: %w", err)
		}
		if !ok {
			return Settled{}, fmt.Errorf("settle: %w", ErrStreamLost) // rolled back: another leader streams
		}
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("settle: commit: %w", err)
	}
	for _, id := range published {
		c.known.record(keyOf[id])
	}
	res.LostLeases = named - touched
	return res, nil
}

// release decides what an unsent event's row says once given back, and
// whether anything is to be written. One stopped by a configuration failure
// (Unsent.Class set: the relay's Kafka configuration, docs/security.md) is
// charged nothing: no attempt, no failure-log row, no backoff of its own
// (the relay backs off, not the event), never quarantined; its row says
// what stopped it. One behind a failure waits for it, as long as its retry
// (for ever behind a quarantine under OrderHold). One a shutdown gave up
// needs no write: a claim wrote nothing.
func release(u Unsent, holds map[string]Hold, now time.Time, policy OrderPolicy) (ReleaseUpdate, bool) {
	if u.Class != "" {
		return ReleaseUpdate{EventID: u.EventID, Hold: Hold{Until: now}, Class: u.Class,
			Message: redact.Truncate(redact.Secrets(u.Message), LastErrorMaxLen)}, true
	}
	if u.Behind == "" {
		return ReleaseUpdate{}, false
	}
	h, ok := holds[u.Behind]
	if !ok || h.Forever && policy == OrderSkipQuarantined {
		h = Hold{Until: now}
	}
	h.Behind = u.Behind
	return ReleaseUpdate{EventID: u.EventID, Hold: h, Class: ErrorClassHeld, Message: HeldMessage(u.Behind)}, true
}
