package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStreamLost: the relay no longer holds the stream lease (another
// relay leads now); its checkpoint and the settlement that carried it
// were not written.
var ErrStreamLost = errors.New("the stream lease was lost")

// visibleWait bounds how long PlanStream waits for rows the change stream
// reported but the database does not show yet: a transaction reaches the
// binlog an instant before its commit is visible.
const visibleWait = 10 * time.Second

// PlanStream plans a batch read from the change stream (docs/design.md,
// section 9.2): it leaves alone the events already published or in the
// polling path's hands, decides the order of the others against their
// predecessors (known, else read) without bringing predecessors in, holds
// (fenced) the events that must wait, which hands them to the polling
// path, and returns the claim of the events to publish now.
func (s *Store) PlanStream(ctx context.Context, own Ownership, events []Event, policy OrderPolicy, known *Known) (Claim, error) {
	start := time.Now()
	claim := Claim{Ownership: own, known: known, streamed: true}
	if len(events) == 0 {
		return claim, nil
	}
	states, err := s.visibleStates(ctx, events)
	if err != nil {
		return claim, err
	}
	byID := make(map[string]Event, len(events))
	bucketOf := map[AggregateKey]int{}
	var cands []Candidate
	for _, e := range events {
		if st := states[e.ID]; st.Published || st.HandedOver {
			continue
		}
		byID[e.ID] = e
		bucketOf[AggregateKey{e.AggregateType, e.AggregateID}] = e.Bucket
		cands = append(cands, Candidate{ID: e.ID, Key: SeqKey{e.AggregateType, e.AggregateID, e.AggregateSeq}})
	}
	if len(cands) == 0 {
		return claim, nil
	}
	p, err := planClaim(cands, len(cands), policy, s.predecessors(ctx, known, untouchedRule{all: true}), streamMode)
	if err != nil {
		return claim, fmt.Errorf("stream: read predecessors: %w", err)
	}
	for _, c := range p.leased() {
		e := byID[c.ID]
		e.Attempts++
		claim.Events = append(claim.Events, e)
	}
	if err := s.hold(ctx, own, bucketOf, p.held); err != nil {
		return claim, err
	}
	claim.Held = len(p.held)
	claim.Duration = time.Since(start)
	return claim, nil
}

// visibleStates reads the events' states, reading again those whose rows
// are not visible yet.
func (s *Store) visibleStates(ctx context.Context, events []Event) (map[string]EventState, error) {
	states := make(map[string]EventState, len(events))
	missing := make([]string, len(events))
	for i, e := range events {
		missing[i] = e.ID
	}
	deadline := time.Now().Add(visibleWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		read, err := s.dialect.ReadStates(ctx, s.db, missing)
		if err != nil {
			return nil, fmt.Errorf("stream: read the events' states: %w", err)
		}
		var still []string
		for _, id := range missing {
			if st, ok := read[id]; ok {
				states[id] = st
			} else {
				still = append(still, id)
			}
		}
		if len(still) == 0 {
			return states, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream: %d events of the change stream are not visible in the database after %v (first %s)",
				len(still), visibleWait, still[0])
		}
		missing = still
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// SaveCheckpoint moves the change stream's position while the relay holds
// the stream lease at epoch; ErrStreamLost when it does not.
func (s *Store) SaveCheckpoint(ctx context.Context, relayID string, cp Checkpoint) error {
	ok, err := s.dialect.SaveCheckpoint(ctx, s.db, relayID, cp)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if !ok {
		return ErrStreamLost
	}
	return nil
}

// Stream reads the change stream's row, for operators.
func (s *Store) Stream(ctx context.Context) (StreamLease, time.Time, error) {
	l, now, err := s.dialect.ReadStream(ctx, s.db)
	if err != nil {
		return l, now, fmt.Errorf("read the stream: %w", err)
	}
	return l, now, nil
}

// SampleWatermark takes a sample of the change stream's watermark
// (docs/design.md, section 9.3).
func (s *Store) SampleWatermark(ctx context.Context) (WatermarkSample, error) {
	sample, err := s.dialect.SampleWatermark(ctx, s.db)
	if err != nil {
		return sample, fmt.Errorf("sample the watermark: %w", err)
	}
	return sample, nil
}

// WatermarkEnded says whether every transaction sample waits for has
// ended.
func (s *Store) WatermarkEnded(ctx context.Context, sample WatermarkSample) (bool, error) {
	ended, err := s.dialect.WatermarkEnded(ctx, s.db, sample)
	if err != nil {
		return false, fmt.Errorf("watermark: %w", err)
	}
	return ended, nil
}

// ReplicationSlot is a logical replication slot of the outbox's database
// (PostgreSQL; docs/postgres-stream.md): what herald status and the
// metrics show of the WAL source's slot, and of any other slot left in
// the database.
type ReplicationSlot struct {
	Name   string `json:"name"`
	Plugin string `json:"plugin"`
	// Active says a connection streams from it now, ActivePID its server
	// process.
	Active    bool `json:"active"`
	ActivePID int  `json:"active_pid,omitempty"`
	// RestartLSN is the oldest WAL the slot keeps; ConfirmedFlushLSN the
	// position its reader confirmed (herald confirms only its
	// checkpoint). Empty when the slot was invalidated.
	RestartLSN        string `json:"restart_lsn"`
	ConfirmedFlushLSN string `json:"confirmed_flush_lsn"`
	// RetainedBytes is the WAL the slot keeps on disk (the server's
	// position less RestartLSN); LagBytes how far ConfirmedFlushLSN is
	// behind the server's position. -1 when unknown (invalidated).
	RetainedBytes int64 `json:"retained_bytes"`
	LagBytes      int64 `json:"lag_bytes"`
	// WALStatus is the server's judgement of the slot's WAL: reserved,
	// extended, unreserved (beyond max_slot_wal_keep_size, not yet
	// removed) or lost (invalidated: it cannot stream again).
	WALStatus string `json:"wal_status"`
	// SafeWALBytes is how much more WAL the slot may retain before it is
	// invalidated; -1 without a limit (max_slot_wal_keep_size = -1).
	SafeWALBytes int64 `json:"safe_wal_bytes"`
}

// Lost says the slot was invalidated: its WAL is gone.
func (s ReplicationSlot) Lost() bool { return s.WALStatus == "lost" }

// SlotDialect reads the replication slots of the database: a dialect
// whose change stream uses slots (PostgreSQL) implements it.
type SlotDialect interface {
	// ReadSlots returns the logical replication slots of the current
	// database, by name.
	ReadSlots(ctx context.Context, q Querier) ([]ReplicationSlot, error)
}

// ReplicationSlots reads the database's logical replication slots; false
// when the dialect has none (MariaDB/MySQL).
func (s *Store) ReplicationSlots(ctx context.Context) ([]ReplicationSlot, bool, error) {
	d, ok := s.dialect.(SlotDialect)
	if !ok {
		return nil, false, nil
	}
	slots, err := d.ReadSlots(ctx, s.db)
	if err != nil {
		return nil, true, fmt.Errorf("read the replication slots: %w", err)
	}
	return slots, true, nil
}
