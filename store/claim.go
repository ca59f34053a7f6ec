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

// ErrorClassReleased is the error_class of an event an operator's retry or
// discard made ready again (the retried event, and the events held behind
// it): no attempt of it failed. It is set, not NULL, because a change
// stream's leader claims only rows handed over to the polling path
// (error_class set, docs/design.md, section 9.2): the stream passed these
// long ago, and with NULL nothing would claim them while it runs.
const ErrorClassReleased = "released"

// HeldMessage is the last_error of an event held behind the event behind.
func HeldMessage(behind string) string {
	return "held behind event " + behind + " of the same aggregate"
}

// Claim takes a batch of ready events from the owned buckets: one
// non-locking read, the order check against predecessors (from Known, else
// read), and, when some must wait, one fenced write that holds them.
// Nothing marks the events as taken: the relay owns their buckets (see
// docs/design.md, section 4.2).
func (s *Store) Claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	start := time.Now()
	claim := Claim{Ownership: req.Ownership, known: req.Known}
	if len(req.Ownership.Buckets) == 0 || req.Limit < 1 {
		return claim, nil
	}
	ready := ReadyRequest{Limit: req.Limit, After: req.After, HandedOver: req.HandedOver, Watermark: req.Watermark}
	rule := untouchedRule{all: req.HandedOver, below: req.Watermark}
	if !req.Ownership.All() {
		ready.Buckets = req.Ownership.List()
	}
	byID := map[string]Event{}
	bucketOf := map[AggregateKey]int{}
	var held []*planned
	for round := 0; round < 2 && len(claim.Events) < req.Limit; round++ {
		events, last, err := s.dialect.ReadReady(ctx, s.db, ready)
		if err != nil {
			return claim, fmt.Errorf("claim: read ready events: %w", err)
		}

		cands := make([]Candidate, len(events))
		for i, e := range events {
			byID[e.ID] = e
			bucketOf[AggregateKey{e.AggregateType, e.AggregateID}] = e.Bucket
			cands[i] = Candidate{ID: e.ID, Key: SeqKey{e.AggregateType, e.AggregateID, e.AggregateSeq}}
		}
		p, err := planClaim(cands, req.Limit-len(claim.Events), req.Policy, s.predecessors(ctx, req.Known, rule), pollMode)
		if err != nil {
			return claim, fmt.Errorf("claim: read predecessors: %w", err)
		}
		leased, err := s.fullEvents(ctx, p, byID)
		if err != nil {
			return claim, err
		}
		took := map[string]bool{}
		for _, e := range leased {
			took[e.ID] = true
			e.Attempts++
			claim.Events = append(claim.Events, e)
		}
		// The next claim may continue after this read only if it was a
		// full window and left nothing behind.
		if round == 0 && len(events) == ready.Limit && allTaken(events, took) {
			claim.Next = &last
		}
		held = append(held, p.held...)
		// A second read only when chains were cut and the first read was a
		// full window: past every aggregate it saw, so no aggregate is
		// planned twice.
		if len(p.cut) == 0 || len(events) < ready.Limit {
			break
		}
		seen := map[AggregateKey]bool{}
		for _, c := range cands {
			k := AggregateKey{c.Key.AggregateType, c.Key.AggregateID}
			if !seen[k] {
				seen[k] = true
				ready.Exclude = append(ready.Exclude, k)
			}
		}
	}
	if err := s.hold(ctx, claim.Ownership, bucketOf, held); err != nil {
		return claim, err
	}
	claim.Held = len(held)
	claim.Duration = time.Since(start)
	return claim, nil
}

func allTaken(events []Event, took map[string]bool) bool {
	for _, e := range events {
		if !took[e.ID] {
			return false
		}
	}
	return true
}

// fullEvents returns the events of the plan's chains, in chain order. The
// ready predecessors the order check brought in were not read in full: they
// are read now, and a chain ends before one that is no longer ready.
func (s *Store) fullEvents(ctx context.Context, p *plan, byID map[string]Event) ([]Event, error) {
	var missing []string
	for _, c := range p.leased() {
		if _, ok := byID[c.ID]; !ok {
			missing = append(missing, c.ID)
		}
	}
	if len(missing) > 0 {
		events, err := s.dialect.ReadEvents(ctx, s.db, missing)
		if err != nil {
			return nil, fmt.Errorf("claim: read brought-in predecessors: %w", err)
		}
		for _, e := range events {
			byID[e.ID] = e
		}
	}
	var out []Event
	for _, chain := range p.chains {
		for _, c := range chain {
			e, ok := byID[c.ID]
			if !ok {
				break // no longer ready: its successors must not overtake it
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// untouchedRule says which untouched predecessors are done: published by
// a change stream without a write of their own (docs/design.md, section
// 9.4).
type untouchedRule struct {
	// all: every one (the stream passed it: the stream itself, and the
	// polling path of its leader, which claims only what the stream handed
	// over).
	all bool
	// below: those whose next_attempt_at is before the watermark (zero:
	// none).
	below time.Time
}

func (u untouchedRule) done(p Predecessor) bool {
	return p.Untouched && (u.all || !u.below.IsZero() && p.NextAttempt.Before(u.below))
}

// predecessors reads predecessors, asking known first; an untouched one is
// done as rule says.
func (s *Store) predecessors(ctx context.Context, known *Known, rule untouchedRule) predecessorReader {
	return func(keys []SeqKey) (time.Time, map[SeqKey]Predecessor, error) {
		found := make(map[SeqKey]Predecessor, len(keys))
		var unknown []SeqKey
		for _, k := range keys {
			if known.isDone(k) {
				found[k] = Predecessor{Done: true}
			} else {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) == 0 {
			return time.Time{}, found, nil
		}
		now, read, err := s.dialect.ReadPredecessors(ctx, s.db, unknown)
		if err != nil {
			return now, nil, err
		}
		for k, p := range read {
			p.Done = p.Done || rule.done(p)
			found[k] = p
			if p.Done {
				known.record(k)
			}
		}
		return now, found, nil
	}
}

// hold moves the held candidates out of the claim range, fenced like a
// settlement: only events of buckets the relay still owns. Candidates
// behind the same event until the same time share one statement.
func (s *Store) hold(ctx context.Context, own Ownership, bucketOf map[AggregateKey]int, held []*planned) error {
	if len(held) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("claim: hold: begin: %w", err)
	}
	defer tx.Rollback()
	buckets := map[string]int{}
	for _, c := range held {
		buckets[c.ID] = bucketOf[AggregateKey{c.Key.AggregateType, c.Key.AggregateID}]
	}
	fence, err := s.lockOwned(ctx, tx, own, buckets)
	if err != nil {
		return fmt.Errorf("claim: hold: %w", err)
	}
	groups := map[Hold][]string{}
	var order []Hold
	for _, c := range held {
		if !fence(c.ID) {
			continue
		}
		if groups[c.hold] == nil {
			order = append(order, c.hold)
		}
		groups[c.hold] = append(groups[c.hold], c.ID)
	}
	for _, h := range order {
		if err := s.dialect.Hold(ctx, tx, groups[h], h); err != nil {
			return fmt.Errorf("claim: hold %d events behind %s: %w", len(groups[h]), h.Behind, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("claim: hold: commit: %w", err)
	}
	return nil
}

// lockOwned locks the relay's rows of the buckets of the given events (id
// -> bucket) in share mode and returns which of the events may still be
// written: those whose bucket is owned at the epoch of own.
func (s *Store) lockOwned(ctx context.Context, q Querier, own Ownership, bucketOf map[string]int) (func(id string) bool, error) {
	seen := map[int]bool{}
	var buckets []int
	for _, b := range bucketOf {
		if !seen[b] {
			seen[b] = true
			buckets = append(buckets, b)
		}
	}
	epochs := map[int]uint64{}
	if len(buckets) > 0 {
		var err error
		if epochs, err = s.dialect.LockBuckets(ctx, q, own.RelayID, buckets); err != nil {
			return nil, fmt.Errorf("lock buckets: %w", err)
		}
	}
	return func(id string) bool {
		b, ok := bucketOf[id]
		if !ok {
			return false
		}
		epoch, owned := epochs[b]
		return owned && epoch == own.Buckets[b]
	}, nil
}
