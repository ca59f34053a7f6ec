package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// candidateWindow is how many ready rows a claim looks at per event it may
// lease: rows whose aggregate is in flight with another relay are passed
// over, and the claim looks further down the queue for other aggregates.
const candidateWindow = 2

// ClaimQuery reads the claim's candidates, walking idx_ready in index order
// (no filesort): the ready rows, oldest first. A live lease or a backoff
// keeps next_attempt_at in the future and quarantined rows sit at
// store.Never, all outside the range. It takes no lock; lockQuery locks
// exactly the rows the claim will lease. Exported for tests that EXPLAIN it.
const ClaimQuery = `
SELECT id, aggregate_type, aggregate_id, aggregate_seq
FROM outbox_events FORCE INDEX (idx_ready)
WHERE published_at IS NULL AND next_attempt_at <= NOW(6)
ORDER BY next_attempt_at, occurred_at
LIMIT ?`

// lockQuery locks chosen candidates that are still ready, skipping rows a
// concurrent claim holds; %s is the id placeholders.
const lockQuery = `
SELECT NOW(6), id, event_type, schema_version, payload, headers, occurred_at, attempts,
       COALESCE(error_class, ''), locked_by IS NOT NULL
FROM outbox_events
WHERE id IN (%s) AND published_at IS NULL AND next_attempt_at <= NOW(6)
FOR UPDATE SKIP LOCKED`

// Store implements store.Store on MySQL and MariaDB.
type Store struct {
	db *sql.DB
}

// NewStore returns a Store on db (opened with Open, so times are UTC).
func NewStore(db *sql.DB) *Store {
	return &Store{db: db}
}

var _ store.Store = (*Store)(nil)

// fate is what a claim does with a candidate.
type fate int

const (
	// lease: every earlier event of the aggregate is done, or leased in this
	// claim right before it.
	lease fate = iota
	// skip: an earlier event is in flight (leased by another relay, or ready
	// but not leasable now); the candidate is left as it is.
	skip
	// park: an earlier event waits (backing off, held or quarantined); the
	// candidate leaves the claim range until then.
	park
)

type candidate struct {
	event     store.Event
	fate      fate
	parkUntil time.Time
	behind    string // the event a parked candidate waits for
	locked    bool
	stolen    bool
}

type aggregateKey struct {
	typ, id string
	seq     uint64
}

// Claim leases a batch in one short READ COMMITTED transaction; see
// docs/design.md, "Claiming".
func (s *Store) Claim(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	start := time.Now()
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return store.Claim{}, fmt.Errorf("claim: begin: %w", err)
	}
	defer tx.Rollback()

	cands, err := readCandidates(ctx, tx, req.Limit*candidateWindow)
	if err != nil {
		return store.Claim{}, err
	}
	claim := store.Claim{Lease: store.Lease{RelayID: req.RelayID}}
	if len(cands) == 0 {
		claim.Duration = time.Since(start)
		return claim, tx.Commit()
	}
	if cands, err = decideFates(ctx, tx, cands, req.Policy); err != nil {
		return store.Claim{}, err
	}
	chains, parked := choose(cands, req.Limit)
	now, err := lockChosen(ctx, tx, chains, parked)
	if err != nil {
		return store.Claim{}, err
	}
	claim.Lease.LockedAt, claim.Lease.Expires = now, now.Add(req.Lease)

	var leased []string
	for _, chain := range chains {
		// A chain is published in order: it ends at its first member a
		// concurrent claim took.
		for _, c := range chain {
			if !c.locked {
				break
			}
			leased = append(leased, c.event.ID)
			c.event.Attempts++
			claim.Events = append(claim.Events, c.event)
			if c.stolen {
				claim.Steals++
			}
		}
	}
	if len(leased) > 0 {
		q := `UPDATE outbox_events SET locked_by = ?, locked_at = ?, next_attempt_at = ?, attempts = attempts + 1
		      WHERE id IN (` + placeholders(len(leased)) + `)`
		args := append([]any{req.RelayID, now, claim.Lease.Expires}, anySlice(leased)...)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return store.Claim{}, fmt.Errorf("claim: lease %d events: %w", len(leased), err)
		}
	}
	var held []*candidate
	for _, c := range parked {
		if c.locked {
			held = append(held, c)
		}
	}
	if err := parkHeld(ctx, tx, held); err != nil {
		return store.Claim{}, err
	}
	if err := tx.Commit(); err != nil {
		return store.Claim{}, fmt.Errorf("claim: commit: %w", err)
	}
	claim.Held = len(held)
	for _, c := range cands {
		if c.fate == skip {
			claim.Skipped++
		}
	}
	claim.Duration = time.Since(start)
	return claim, nil
}

func readCandidates(ctx context.Context, tx *sql.Tx, limit int) ([]*candidate, error) {
	rows, err := tx.QueryContext(ctx, ClaimQuery, limit)
	if err != nil {
		return nil, fmt.Errorf("claim: select candidates: %w", err)
	}
	defer rows.Close()
	var cands []*candidate
	for rows.Next() {
		c := &candidate{}
		e := &c.event
		if err := rows.Scan(&e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq); err != nil {
			return nil, fmt.Errorf("claim: scan candidate: %w", err)
		}
		cands = append(cands, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: read candidates: %w", err)
	}
	return cands, nil
}

// predecessorRounds bounds how far back a claim follows ready predecessors
// that are not among its candidates.
const predecessorRounds = 4

// holdRecheck is how long a candidate waits when its ready predecessor
// could not be brought into the claim (see decideFates).
const holdRecheck = time.Second

// decideFates sets each candidate's fate from its predecessor in the
// aggregate: a candidate may be leased when its predecessor is done
// (published, discarded, or deleted after publication) or is a candidate
// that may be leased. A predecessor that is ready but lies outside the
// candidate window (a crashed relay's expired lease, a finished backoff,
// sorted behind its own successors) is brought into the claim as a
// candidate, so the window cannot fill up with its successors for ever. It
// returns the candidates, with those it added.
func decideFates(ctx context.Context, tx *sql.Tx, cands []*candidate, policy store.OrderPolicy) ([]*candidate, error) {
	byKey := make(map[aggregateKey]*candidate, len(cands))
	for _, c := range cands {
		byKey[aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq}] = c
	}
	preds := map[aggregateKey]predecessor{}
	var now time.Time
	pending := cands
	for round := 0; ; round++ {
		var lookups []aggregateKey
		for _, c := range pending {
			pred := aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq - 1}
			if _, seen := preds[pred]; c.event.AggregateSeq > 1 && byKey[pred] == nil && !seen {
				lookups = append(lookups, pred)
			}
		}
		at, found, err := readPredecessors(ctx, tx, lookups)
		if err != nil {
			return nil, err
		}
		if !at.IsZero() {
			now = at // the clock of the latest read; a round without reads keeps it
		}
		pending = nil
		for k, p := range found {
			if round < predecessorRounds && p.ready(now) {
				c := &candidate{event: store.Event{ID: p.id, AggregateType: k.typ, AggregateID: k.id, AggregateSeq: k.seq}}
				byKey[k] = c
				pending = append(pending, c)
				continue
			}
			preds[k] = p
		}
		cands = append(cands, pending...)
		if len(pending) == 0 {
			break
		}
	}

	bySeq := slices.Clone(cands)
	slices.SortFunc(bySeq, func(a, b *candidate) int {
		if c := strings.Compare(a.event.AggregateType, b.event.AggregateType); c != 0 {
			return c
		}
		if c := strings.Compare(a.event.AggregateID, b.event.AggregateID); c != 0 {
			return c
		}
		return compareUint(a.event.AggregateSeq, b.event.AggregateSeq)
	})
	for _, c := range bySeq { // a predecessor is decided before its successor
		if c.event.AggregateSeq == 1 {
			c.fate = lease
			continue
		}
		key := aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq - 1}
		if p := byKey[key]; p != nil {
			c.fate, c.parkUntil, c.behind = p.fate, p.parkUntil, p.behind
			continue
		}
		p, found := preds[key]
		switch {
		case !found, p.done, policy == store.OrderSkipQuarantined && p.quarantined:
			c.fate = lease
		case p.leased:
			c.fate = skip
		case p.ready(now):
			// Still behind ready predecessors after every round: look again
			// soon, out of the way of the window.
			c.fate, c.parkUntil, c.behind = park, now.Add(holdRecheck), p.id
		default:
			// Backing off, held itself, or quarantined (Never): wait with it.
			c.fate, c.parkUntil, c.behind = park, p.nextAttempt, p.id
		}
	}
	return cands, nil
}

// choose picks up to limit events to lease, as whole chains (an aggregate's
// consecutive leasable candidates, in sequence order) taken in queue order,
// and the candidates to park.
func choose(cands []*candidate, limit int) (chains [][]*candidate, parked []*candidate) {
	byAggregate := map[[2]string][]*candidate{}
	for _, c := range cands {
		k := [2]string{c.event.AggregateType, c.event.AggregateID}
		switch c.fate {
		case lease:
			byAggregate[k] = append(byAggregate[k], c)
		case park:
			parked = append(parked, c)
		}
	}
	taken := map[[2]string]bool{}
	n := 0
	for _, c := range cands { // queue order
		k := [2]string{c.event.AggregateType, c.event.AggregateID}
		if c.fate != lease || taken[k] || n >= limit {
			continue
		}
		taken[k] = true
		chain := byAggregate[k]
		slices.SortFunc(chain, func(a, b *candidate) int { return compareUint(a.event.AggregateSeq, b.event.AggregateSeq) })
		chain = chain[:min(len(chain), limit-n)]
		n += len(chain)
		chains = append(chains, chain)
	}
	return chains, parked
}

// lockChosen locks the chosen candidates that are still ready and fills in
// the leased ones' rows; it returns the database's time, zero when it locked
// nothing (there is then no lease).
func lockChosen(ctx context.Context, tx *sql.Tx, chains [][]*candidate, parked []*candidate) (time.Time, error) {
	byID := map[string]*candidate{}
	for _, chain := range chains {
		for _, c := range chain {
			byID[c.event.ID] = c
		}
	}
	for _, c := range parked {
		byID[c.event.ID] = c
	}
	var now time.Time
	if len(byID) == 0 {
		return now, nil // nothing to lease or park: no lease to date
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(lockQuery, placeholders(len(ids))), anySlice(ids)...)
	if err != nil {
		return now, fmt.Errorf("claim: lock %d candidates: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      string
			headers sql.NullString
			e       store.Event
			stolen  bool
		)
		if err := rows.Scan(&now, &id, &e.EventType, &e.SchemaVersion, &e.Payload, &headers, &e.OccurredAt,
			&e.Attempts, &e.PreviousErrorClass, &stolen); err != nil {
			return now, fmt.Errorf("claim: scan locked row: %w", err)
		}
		c := byID[id]
		c.locked, c.stolen = true, stolen
		c.event.EventType, c.event.SchemaVersion, c.event.Payload = e.EventType, e.SchemaVersion, e.Payload
		c.event.OccurredAt, c.event.Attempts, c.event.PreviousErrorClass = e.OccurredAt, e.Attempts, e.PreviousErrorClass
		if headers.Valid {
			if err := json.Unmarshal([]byte(headers.String), &c.event.Headers); err != nil {
				return now, fmt.Errorf("claim: event %s: headers are not a JSON object: %w", id, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return now, fmt.Errorf("claim: lock candidates: %w", err)
	}
	return now, nil // zero when nothing was still ready: nothing is leased
}

type predecessor struct {
	id          string
	done        bool
	quarantined bool
	leased      bool
	nextAttempt time.Time
}

// ready says whether the predecessor could be claimed now.
func (p predecessor) ready(now time.Time) bool {
	return !p.done && !p.leased && !p.quarantined && !p.nextAttempt.After(now)
}

// readPredecessors reads the given events (non-locking) and returns the
// database's time with them (zero when there was none to read: no fate then
// depends on it).
func readPredecessors(ctx context.Context, tx *sql.Tx, keys []aggregateKey) (time.Time, map[aggregateKey]predecessor, error) {
	out := make(map[aggregateKey]predecessor, len(keys))
	var now time.Time
	if len(keys) == 0 {
		return now, out, nil // no predecessor to judge against the clock
	}
	var q strings.Builder
	q.WriteString(`SELECT NOW(6), aggregate_type, aggregate_id, aggregate_seq, id,
		published_at IS NOT NULL OR discarded_at IS NOT NULL, quarantined_at IS NOT NULL,
		locked_by IS NOT NULL AND next_attempt_at > NOW(6), next_attempt_at
		FROM outbox_events WHERE (aggregate_type, aggregate_id, aggregate_seq) IN (`)
	args := make([]any, 0, 3*len(keys))
	for i, k := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?)")
		args = append(args, k.typ, k.id, k.seq)
	}
	q.WriteString(")")
	rows, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return now, nil, fmt.Errorf("claim: read predecessors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k aggregateKey
		var p predecessor
		if err := rows.Scan(&now, &k.typ, &k.id, &k.seq, &p.id, &p.done, &p.quarantined, &p.leased, &p.nextAttempt); err != nil {
			return now, nil, fmt.Errorf("claim: scan predecessor: %w", err)
		}
		out[k] = p
	}
	if err := rows.Err(); err != nil {
		return now, nil, fmt.Errorf("claim: read predecessors: %w", err)
	}
	return now, out, nil // zero when none was found: every one is absent, so done
}

// parkHeld moves held candidates out of the claim range until the event
// that blocks them may have moved on, and says why in last_error.
// Candidates behind the same blocker share one statement.
func parkHeld(ctx context.Context, tx *sql.Tx, held []*candidate) error {
	type group struct {
		until  time.Time
		behind string
	}
	groups := map[group][]string{}
	var order []group
	for _, c := range held {
		g := group{c.parkUntil, c.behind}
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], c.event.ID)
	}
	for _, g := range order {
		ids := groups[g]
		args := append([]any{g.until, ErrorClassHeld, "held behind event " + g.behind + " of the same aggregate"}, anySlice(ids)...)
		_, err := tx.ExecContext(ctx, `UPDATE outbox_events
			SET next_attempt_at = ?, locked_by = NULL, locked_at = NULL, error_class = ?, last_error = ?
			WHERE id IN (`+placeholders(len(ids))+`)`, args...)
		if err != nil {
			return fmt.Errorf("claim: park %d events behind %s: %w", len(ids), g.behind, err)
		}
	}
	return nil
}

// ErrorClassHeld marks an event parked behind an earlier event of its
// aggregate (it did not fail itself).
const ErrorClassHeld = "held"

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anySlice(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
