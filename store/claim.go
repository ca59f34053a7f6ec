package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ErrorClassHeld is the error_class of an event held behind an earlier
// event of its aggregate (it did not fail itself).
const ErrorClassHeld = "held"

// HeldMessage is the last_error of an event held behind the event behind.
func HeldMessage(behind string) string {
	return "held behind event " + behind + " of the same aggregate"
}

// Claim leases a batch in one short READ COMMITTED transaction: it reads
// candidates, plans their fates, locks the chosen rows with SKIP LOCKED,
// leases the chains and holds what must wait. See docs/design.md,
// "Claiming".
func (s *Store) Claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	start := time.Now()
	claim := Claim{Lease: Lease{RelayID: req.RelayID}}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return claim, fmt.Errorf("claim: begin: %w", err)
	}
	defer tx.Rollback()

	cands, err := s.dialect.ReadCandidates(ctx, tx, req.Limit*candidateWindow)
	if err != nil {
		return claim, fmt.Errorf("claim: read candidates: %w", err)
	}
	if len(cands) == 0 {
		claim.Duration = time.Since(start)
		return claim, tx.Commit()
	}
	p, err := planClaim(cands, req.Limit, req.Policy, func(keys []SeqKey) (time.Time, map[SeqKey]Predecessor, error) {
		return s.dialect.ReadPredecessors(ctx, tx, keys)
	})
	if err != nil {
		return claim, fmt.Errorf("claim: read predecessors: %w", err)
	}
	var now time.Time
	if ids := p.toLock(); len(ids) > 0 {
		var locked []LockedEvent
		if now, locked, err = s.dialect.LockReady(ctx, tx, ids); err != nil {
			return claim, fmt.Errorf("claim: lock %d candidates: %w", len(ids), err)
		}
		p.setLocked(locked)
	}

	leased := p.leased()
	if len(leased) > 0 {
		claim.Lease.LockedAt, claim.Lease.Expires = now, now.Add(req.Lease)
		ids := make([]string, len(leased))
		for i, c := range leased {
			ids[i] = c.ID
			e := c.locked.Event
			e.Attempts++
			claim.Events = append(claim.Events, e)
			if c.locked.Stolen {
				claim.Steals++
			}
		}
		if err := s.dialect.Lease(ctx, tx, ids, claim.Lease); err != nil {
			return claim, fmt.Errorf("claim: lease %d events: %w", len(ids), err)
		}
	}
	held := p.lockedHeld()
	if err := s.hold(ctx, tx, held); err != nil {
		return claim, err
	}
	if err := tx.Commit(); err != nil {
		return claim, fmt.Errorf("claim: commit: %w", err)
	}
	claim.Held = len(held)
	claim.Skipped = p.skipped()
	claim.Duration = time.Since(start)
	return claim, nil
}

// hold moves the held candidates out of the claim range; candidates behind
// the same event until the same time share one statement.
func (s *Store) hold(ctx context.Context, q Querier, held []*planned) error {
	groups := map[Hold][]string{}
	var order []Hold
	for _, c := range held {
		if groups[c.hold] == nil {
			order = append(order, c.hold)
		}
		groups[c.hold] = append(groups[c.hold], c.ID)
	}
	for _, h := range order {
		if err := s.dialect.Hold(ctx, q, groups[h], h); err != nil {
			return fmt.Errorf("claim: hold %d events behind %s: %w", len(groups[h]), h.Behind, err)
		}
	}
	return nil
}
