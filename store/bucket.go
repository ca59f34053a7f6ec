package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// BucketCount is how many buckets the aggregates are hashed into
// (docs/design.md, section 4.1). Changing it would move aggregates between
// buckets under running relays: it is part of the schema.
const BucketCount = 64

// Ownership is the buckets a relay owns, each with the epoch it acquired it
// at: the fencing token of everything the relay claims from them.
type Ownership struct {
	RelayID string
	// Buckets maps each owned bucket to its epoch.
	Buckets map[int]uint64
	// Expires is the earliest lease expiry among them (database clock);
	// zero when none is owned.
	Expires time.Time
}

// All says whether the relay owns every bucket.
func (o Ownership) All() bool { return len(o.Buckets) == BucketCount }

// List returns the owned buckets in order.
func (o Ownership) List() []int { return slices.Sorted(maps.Keys(o.Buckets)) }

// BucketLease is one row of the bucket table.
type BucketLease struct {
	Bucket int
	// Owner is "" when the bucket is free.
	Owner string
	Epoch uint64
	// Expires is the owner's lease expiry (database clock).
	Expires time.Time
}

// RebalanceRequest is one relay's periodic turn at the bucket table.
type RebalanceRequest struct {
	RelayID string
	// Lease is how long the relay's membership and buckets last without the
	// next turn.
	Lease time.Duration
}

// Rebalance is what a turn did.
type Rebalance struct {
	// Ownership is what the relay owns now.
	Ownership Ownership
	// Now is the database clock during the turn: Ownership.Expires minus
	// Now is how long the lease lasts.
	Now time.Time
	// Members counts the live relays.
	Members int
	// Acquired and Released count buckets taken and given up in this turn.
	Acquired, Released int
	// TakenOver counts acquired buckets whose previous owner's lease had
	// expired (it stopped renewing: died, hung or lost the database).
	TakenOver int
}

// desiredBuckets is the assignment every relay computes alike: of n live
// members sorted by id, member i should own buckets [64·i/n, 64·(i+1)/n).
// A relay not among the members wants none.
func desiredBuckets(members []string, me string) []int {
	i := slices.Index(members, me)
	if i < 0 {
		return nil
	}
	n := len(members)
	var out []int
	for b := BucketCount * i / n; b < BucketCount*(i+1)/n; b++ {
		out = append(out, b)
	}
	return out
}

// Rebalance announces the relay as live, gives up the buckets it should no
// longer own, renews the ones it keeps and acquires the free or expired ones
// it should own. Call it between batches (never with a batch of a bucket in
// flight), at least every third of the lease.
func (s *Store) Rebalance(ctx context.Context, req RebalanceRequest) (Rebalance, error) {
	var rb Rebalance
	d := s.dialect
	members, err := d.Heartbeat(ctx, s.db, req.RelayID, req.Lease)
	if err != nil {
		return rb, fmt.Errorf("rebalance: heartbeat: %w", err)
	}
	rb.Members = len(members)
	_, leases, err := d.ReadBuckets(ctx, s.db)
	if err != nil {
		return rb, fmt.Errorf("rebalance: read buckets: %w", err)
	}
	if len(leases) < BucketCount {
		if err := d.CreateBuckets(ctx, s.db, BucketCount); err != nil {
			return rb, fmt.Errorf("rebalance: create buckets: %w", err)
		}
		if _, leases, err = d.ReadBuckets(ctx, s.db); err != nil {
			return rb, fmt.Errorf("rebalance: read buckets: %w", err)
		}
	}
	now, err := d.Now(ctx, s.db)
	if err != nil {
		return rb, fmt.Errorf("rebalance: read clock: %w", err)
	}
	rb.Now = now
	want := map[int]bool{}
	for _, b := range desiredBuckets(members, req.RelayID) {
		want[b] = true
	}
	var release, renew, acquire []int
	takeovers := 0
	for _, l := range leases {
		mine := l.Owner == req.RelayID
		switch {
		case mine && !want[l.Bucket]:
			release = append(release, l.Bucket)
		case mine:
			renew = append(renew, l.Bucket)
		case want[l.Bucket] && (l.Owner == "" || !l.Expires.After(now)):
			acquire = append(acquire, l.Bucket)
			if l.Owner != "" {
				takeovers++
			}
		}
	}
	if len(release) > 0 {
		if err := d.ReleaseBuckets(ctx, s.db, req.RelayID, release); err != nil {
			return rb, fmt.Errorf("rebalance: release %d buckets: %w", len(release), err)
		}
	}
	if len(renew) > 0 {
		if err := d.RenewBuckets(ctx, s.db, req.RelayID, renew, req.Lease); err != nil {
			return rb, fmt.Errorf("rebalance: renew %d buckets: %w", len(renew), err)
		}
	}
	if len(acquire) > 0 {
		if err := d.AcquireBuckets(ctx, s.db, req.RelayID, acquire, req.Lease); err != nil {
			return rb, fmt.Errorf("rebalance: acquire %d buckets: %w", len(acquire), err)
		}
	}
	if rb.Ownership, err = s.ownership(ctx, req.RelayID); err != nil {
		return rb, err
	}
	rb.Released = len(release)
	for _, b := range acquire {
		if _, ok := rb.Ownership.Buckets[b]; ok {
			rb.Acquired++
		}
	}
	if rb.Acquired < len(acquire) {
		takeovers = min(takeovers, rb.Acquired) // someone else was faster for some
	}
	rb.TakenOver = takeovers
	return rb, nil
}

// ownership reads what relayID owns.
func (s *Store) ownership(ctx context.Context, relayID string) (Ownership, error) {
	own := Ownership{RelayID: relayID, Buckets: map[int]uint64{}}
	_, leases, err := s.dialect.ReadBuckets(ctx, s.db)
	if err != nil {
		return own, fmt.Errorf("rebalance: read buckets: %w", err)
	}
	for _, l := range leases {
		if l.Owner != relayID {
			continue
		}
		own.Buckets[l.Bucket] = l.Epoch
		if own.Expires.IsZero() || l.Expires.Before(own.Expires) {
			own.Expires = l.Expires
		}
	}
	return own, nil
}

// Leave ends relayID's membership and frees its buckets at once, so the
// other relays take them at their next turn instead of after the lease.
// Call it when the relay stops, after its last batch settled.
func (s *Store) Leave(ctx context.Context, relayID string) error {
	if err := s.dialect.Leave(ctx, s.db, relayID); err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	return nil
}

// Buckets lists the bucket table, for operators.
func (s *Store) Buckets(ctx context.Context) (now time.Time, leases []BucketLease, err error) {
	now, leases, err = s.dialect.ReadBuckets(ctx, s.db)
	if err != nil {
		return now, nil, fmt.Errorf("read buckets: %w", err)
	}
	return now, leases, nil
}

// Known remembers, per aggregate, the latest event known done (published
// or discarded): "done" never reverts, so it can only be out of date in the
// safe direction. It answers for that event only (an earlier one may be
// quarantined behind a later one the skip-quarantined policy let pass). It
// is safe for concurrent use and bounded.
type Known struct {
	mu   sync.Mutex
	done map[aggregateKey]uint64
}

type aggregateKey struct{ typ, id string }

// knownMax bounds Known: past it, it starts over.
const knownMax = 100_000

// NewKnown returns an empty Known.
func NewKnown() *Known { return &Known{done: map[aggregateKey]uint64{}} }

// isDone says whether k is known done.
func (k *Known) isDone(key SeqKey) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	seq, ok := k.done[aggregateKey{key.AggregateType, key.AggregateID}]
	return ok && seq == key.Seq
}

// Acknowledged notes that Kafka acknowledged events (their first copies are
// in their partitions), ahead of their marks: for the order of their
// successors that is what "done" stands for (docs/design.md, section 6).
func (k *Known) Acknowledged(events []Event) {
	for _, e := range events {
		k.record(SeqKey{e.AggregateType, e.AggregateID, e.AggregateSeq})
	}
}

// record notes that key is done.
func (k *Known) record(key SeqKey) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	a := aggregateKey{key.AggregateType, key.AggregateID}
	if k.done[a] >= key.Seq {
		return
	}
	if len(k.done) >= knownMax {
		clear(k.done)
	}
	k.done[a] = key.Seq
}
