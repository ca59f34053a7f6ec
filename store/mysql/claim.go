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

// holdRecheck is how long an event waits behind a predecessor that is in
// flight (leased by a relay, or being claimed right now) before the claim
// looks again: publishing a batch usually takes far less.
const holdRecheck = 500 * time.Millisecond

// ClaimQuery walks idx_ready in index order: no filesort, so only the
// rows read are locked, and SKIP LOCKED passes over rows that a concurrent
// claim holds. A live lease or a backoff keeps next_attempt_at in the future
// and quarantined rows sit at store.Never, all outside the range.
// ClaimQuery is exported for tests that EXPLAIN it.
const ClaimQuery = `
SELECT NOW(6), id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
       payload, headers, occurred_at, attempts, COALESCE(error_class, ''), locked_by IS NOT NULL
FROM outbox_events FORCE INDEX (idx_ready)
WHERE published_at IS NULL AND next_attempt_at <= NOW(6)
ORDER BY next_attempt_at, occurred_at
LIMIT ?
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

type candidate struct {
	event  store.Event
	stolen bool
	// eligible: every earlier event of the aggregate is done or leased in
	// this claim right before it.
	eligible bool
	// parkUntil is when a held candidate is looked at again.
	parkUntil time.Time
	behind    string // the event it is held behind, when known
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

	now, cands, err := readCandidates(ctx, tx, req.Limit)
	if err != nil {
		return store.Claim{}, err
	}
	claim := store.Claim{Lease: store.Lease{RelayID: req.RelayID, LockedAt: now, Expires: now.Add(req.Lease)}}
	if len(cands) == 0 {
		claim.Duration = time.Since(start)
		return claim, tx.Commit()
	}
	if err := checkOrder(ctx, tx, now, cands, req.Policy); err != nil {
		return store.Claim{}, err
	}

	var leased []string
	var held []*candidate
	for _, c := range cands {
		if c.eligible {
			leased = append(leased, c.event.ID)
			c.event.Attempts++
			claim.Events = append(claim.Events, c.event)
			if c.stolen {
				claim.Steals++
			}
		} else {
			held = append(held, c)
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
	if err := park(ctx, tx, held); err != nil {
		return store.Claim{}, err
	}
	if err := tx.Commit(); err != nil {
		return store.Claim{}, fmt.Errorf("claim: commit: %w", err)
	}
	claim.Held = len(held)
	claim.Duration = time.Since(start)
	return claim, nil
}

func readCandidates(ctx context.Context, tx *sql.Tx, limit int) (time.Time, []*candidate, error) {
	rows, err := tx.QueryContext(ctx, ClaimQuery, limit)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("claim: select candidates: %w", err)
	}
	defer rows.Close()
	var (
		now   time.Time
		cands []*candidate
	)
	for rows.Next() {
		c := &candidate{}
		var headers sql.NullString
		e := &c.event
		if err := rows.Scan(&now, &e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq, &e.EventType,
			&e.SchemaVersion, &e.Payload, &headers, &e.OccurredAt, &e.Attempts, &e.PreviousErrorClass, &c.stolen); err != nil {
			return time.Time{}, nil, fmt.Errorf("claim: scan candidate: %w", err)
		}
		if headers.Valid {
			if err := json.Unmarshal([]byte(headers.String), &e.Headers); err != nil {
				return time.Time{}, nil, fmt.Errorf("claim: event %s: headers are not a JSON object: %w", e.ID, err)
			}
		}
		cands = append(cands, c)
	}
	if err := rows.Err(); err != nil {
		return time.Time{}, nil, fmt.Errorf("claim: read candidates: %w", err)
	}
	return now, cands, nil
}

// checkOrder decides which candidates may be published now: an event is
// eligible when its predecessor in the aggregate is done (published,
// discarded, or deleted after publication) or is an eligible candidate of
// this claim. Candidates are sorted by aggregate and sequence on return.
func checkOrder(ctx context.Context, tx *sql.Tx, now time.Time, cands []*candidate, policy store.OrderPolicy) error {
	slices.SortFunc(cands, func(a, b *candidate) int {
		if c := strings.Compare(a.event.AggregateType, b.event.AggregateType); c != 0 {
			return c
		}
		if c := strings.Compare(a.event.AggregateID, b.event.AggregateID); c != 0 {
			return c
		}
		return compareUint(a.event.AggregateSeq, b.event.AggregateSeq)
	})
	byKey := make(map[aggregateKey]*candidate, len(cands))
	for _, c := range cands {
		byKey[aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq}] = c
	}
	var lookups []aggregateKey
	for _, c := range cands {
		pred := aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq - 1}
		if c.event.AggregateSeq > 1 && byKey[pred] == nil {
			lookups = append(lookups, pred)
		}
	}
	preds, err := readPredecessors(ctx, tx, lookups)
	if err != nil {
		return err
	}
	recheck := now.Add(holdRecheck)
	for _, c := range cands { // in sequence order, so a predecessor is decided first
		if c.event.AggregateSeq == 1 {
			c.eligible = true
			continue
		}
		key := aggregateKey{c.event.AggregateType, c.event.AggregateID, c.event.AggregateSeq - 1}
		if p := byKey[key]; p != nil {
			// An eligible predecessor is published in this batch first (if
			// it fails, Settle parks this one behind it); a held one holds
			// this one behind the same blocker.
			c.eligible = p.eligible
			c.parkUntil, c.behind = p.parkUntil, p.behind
			continue
		}
		p, found := preds[key]
		switch {
		case !found, p.done, policy == store.OrderSkipQuarantined && p.quarantined:
			c.eligible = true
		case p.leased || !p.nextAttempt.After(now):
			// In flight, or being claimed by someone else right now.
			c.parkUntil, c.behind = recheck, p.id
		default:
			// Backing off, held itself, or quarantined (Never): wait with it.
			c.parkUntil, c.behind = p.nextAttempt, p.id
		}
	}
	return nil
}

type predecessor struct {
	id          string
	done        bool
	quarantined bool
	leased      bool
	nextAttempt time.Time
}

func readPredecessors(ctx context.Context, tx *sql.Tx, keys []aggregateKey) (map[aggregateKey]predecessor, error) {
	out := make(map[aggregateKey]predecessor, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var q strings.Builder
	q.WriteString(`SELECT aggregate_type, aggregate_id, aggregate_seq, id,
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
		return nil, fmt.Errorf("claim: read predecessors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k aggregateKey
		var p predecessor
		if err := rows.Scan(&k.typ, &k.id, &k.seq, &p.id, &p.done, &p.quarantined, &p.leased, &p.nextAttempt); err != nil {
			return nil, fmt.Errorf("claim: scan predecessor: %w", err)
		}
		out[k] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim: read predecessors: %w", err)
	}
	return out, nil
}

// park moves held candidates out of the claim range until the event that
// blocks them may have moved on, and says why in last_error. Candidates
// behind the same blocker share one statement.
func park(ctx context.Context, tx *sql.Tx, held []*candidate) error {
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
