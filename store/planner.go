package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The planner decides a claim: which candidates are leased (as whole
// chains, in queue order) and which are held behind an earlier event of
// their aggregate. It reads predecessors through a function, so it runs the
// same over any dialect and over an in-memory table in unit tests.
// docs/design.md, section 4.2, gives the rules and section 6 the order
// argument they keep.

// chainShare and chainFloor bound one aggregate's chain in a claim to
// limit/chainShare events, but never below chainFloor (or the limit): a
// chain is produced one record at a time, so a long one would hold its whole
// batch back.
const (
	chainShare = 8
	chainFloor = 16
)

// predecessorRounds bounds how far back a claim follows ready predecessors
// that are not among its candidates.
const predecessorRounds = 4

// holdRecheck is how long a candidate waits when its ready predecessor
// could not be brought into the claim.
const holdRecheck = time.Second

// fate is what a claim does with a candidate.
type fate int

const (
	// fateLease: every earlier event of the aggregate is done, or leased in
	// this claim right before it.
	fateLease fate = iota
	// fateHold: an earlier event waits (backing off, held or quarantined);
	// the candidate leaves the claim range until then.
	fateHold
)

// planned is one candidate and the claim's decision about it.
type planned struct {
	Candidate
	fate fate
	hold Hold
}

// plan is a claim's decisions.
type plan struct {
	// all holds every candidate in queue order, then the predecessors the
	// claim brought in.
	all []*planned
	// chains are the aggregates' runs to lease, in queue order, each in
	// sequence order; together at most the claim's limit.
	chains [][]*planned
	// held are the candidates to hold.
	held []*planned
	// cut are the aggregates whose chain was cut at limit/chainShare.
	cut []AggregateKey
}

// predecessorReader reads the given events (non-locking) and returns the
// database clock of the read; absent events are missing from found.
type predecessorReader func(keys []SeqKey) (now time.Time, found map[SeqKey]Predecessor, err error)

// planClaim decides the fate of every candidate and chooses up to limit
// events to lease.
func planClaim(cands []Candidate, limit int, policy OrderPolicy, read predecessorReader) (*plan, error) {
	p := &plan{all: make([]*planned, len(cands))}
	for i, c := range cands {
		p.all[i] = &planned{Candidate: c}
	}
	if err := p.decideFates(policy, read); err != nil {
		return nil, err
	}
	p.choose(limit)
	return p, nil
}

// decideFates sets each candidate's fate from its predecessor in the
// aggregate: a candidate may be leased when its predecessor is done
// (published, discarded, or deleted after publication) or is a candidate
// that may be leased. A predecessor that is ready but lies outside the
// candidate window (a crashed relay's expired lease, a finished backoff,
// sorted behind its own successors) is brought into the claim as a
// candidate, so the window cannot fill up with its successors for ever.
func (p *plan) decideFates(policy OrderPolicy, read predecessorReader) error {
	byKey := make(map[SeqKey]*planned, len(p.all))
	for _, c := range p.all {
		byKey[c.Key] = c
	}
	preds := map[SeqKey]Predecessor{}
	var now time.Time
	pending := p.all
	for round := 0; ; round++ {
		var lookups []SeqKey
		for _, c := range pending {
			prev := c.Key.Previous()
			if _, seen := preds[prev]; c.Key.Seq > 1 && byKey[prev] == nil && !seen {
				lookups = append(lookups, prev)
			}
		}
		if len(lookups) == 0 {
			break
		}
		at, found, err := read(lookups)
		if err != nil {
			return err
		}
		if !at.IsZero() {
			now = at // the clock of the latest read; a round without reads keeps it
		}
		pending = nil
		for _, k := range lookups { // lookup order keeps the plan deterministic
			pred, ok := found[k]
			if !ok {
				continue // absent: published and cleaned up
			}
			if round < predecessorRounds && pred.ready(now) {
				c := &planned{Candidate: Candidate{ID: pred.ID, Key: k}}
				byKey[k] = c
				pending = append(pending, c)
				continue
			}
			preds[k] = pred
		}
		p.all = append(p.all, pending...)
		if len(pending) == 0 {
			break
		}
	}

	bySeq := slices.Clone(p.all)
	slices.SortFunc(bySeq, func(a, b *planned) int { return compareKeys(a.Key, b.Key) })
	for _, c := range bySeq { // a predecessor is decided before its successor
		if c.Key.Seq == 1 {
			c.fate = fateLease
			continue
		}
		prev := c.Key.Previous()
		if pc := byKey[prev]; pc != nil {
			c.fate, c.hold = pc.fate, pc.hold
			continue
		}
		pred, found := preds[prev]
		switch {
		case !found, pred.Done, policy == OrderSkipQuarantined && pred.Quarantined:
			c.fate = fateLease
		case pred.ready(now):
			// Still behind ready predecessors after every round: look again
			// soon, out of the way of the window.
			c.fate, c.hold = fateHold, Hold{Until: now.Add(holdRecheck), Behind: pred.ID}
		default:
			// Backing off, held itself, or quarantined: wait with it.
			c.fate, c.hold = fateHold, Hold{Behind: pred.ID}
			if pred.Forever || pred.Quarantined {
				c.hold.Forever = true
			} else {
				c.hold.Until = pred.NextAttempt
			}
		}
	}
	return nil
}

// choose picks up to limit events to lease, as whole chains (an
// aggregate's leasable candidates, in sequence order) taken in queue order,
// each cut at limit/chainShare (chainFloor at least), and the candidates to
// hold.
func (p *plan) choose(limit int) {
	byAggregate := map[AggregateKey][]*planned{}
	for _, c := range p.all {
		k := AggregateKey{c.Key.AggregateType, c.Key.AggregateID}
		switch c.fate {
		case fateLease:
			byAggregate[k] = append(byAggregate[k], c)
		case fateHold:
			p.held = append(p.held, c)
		}
	}
	maxChain := max(limit/chainShare, min(limit, chainFloor))
	taken := map[AggregateKey]bool{}
	n := 0
	for _, c := range p.all { // queue order
		k := AggregateKey{c.Key.AggregateType, c.Key.AggregateID}
		if c.fate != fateLease || taken[k] || n >= limit {
			continue
		}
		taken[k] = true
		chain := byAggregate[k]
		slices.SortFunc(chain, func(a, b *planned) int { return cmp.Compare(a.Key.Seq, b.Key.Seq) })
		if len(chain) > maxChain {
			chain = chain[:maxChain]
			p.cut = append(p.cut, k)
		}
		chain = chain[:min(len(chain), limit-n)]
		n += len(chain)
		p.chains = append(p.chains, chain)
	}
}

// leased returns the chains' events, chain by chain.
func (p *plan) leased() []*planned {
	var out []*planned
	for _, chain := range p.chains {
		out = append(out, chain...)
	}
	return out
}

func compareKeys(a, b SeqKey) int {
	return cmp.Or(strings.Compare(a.AggregateType, b.AggregateType),
		strings.Compare(a.AggregateID, b.AggregateID), cmp.Compare(a.Seq, b.Seq))
}
