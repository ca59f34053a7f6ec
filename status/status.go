package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store"
)

// QuarantineShownDefault is how many quarantined events a report lists.
const QuarantineShownDefault = 10

// KafkaTimeoutDefault bounds the Kafka part of a report.
const KafkaTimeoutDefault = 20 * time.Second

// Relay is a relay that owns buckets (docs/design.md, section 4.1).
type Relay struct {
	RelayID string `json:"relay_id"`
	Buckets int    `json:"buckets"`
	// Epoch is the highest lease epoch among its buckets: it grows by one
	// each time a bucket changes hands.
	Epoch uint64 `json:"epoch"`
	// LeaseLeft is the time until its earliest bucket lease ends unless
	// renewed; negative when it ended (the relay stopped renewing).
	LeaseLeft time.Duration `json:"lease_left_ns"`
	// LeaseExpires is when that lease ends (database clock).
	LeaseExpires time.Time `json:"lease_expires_at"`
}

// Expired says whether the relay's earliest bucket lease ended: it died,
// hangs or lost the database; the others take its buckets at their next
// turn.
func (r Relay) Expired() bool { return r.LeaseLeft <= 0 }

// Stream is the change stream (docs/design.md, section 9): absent when no
// relay ever streamed.
type Stream struct {
	// Source is "binlog" or "wal" while a leader's lease runs (the
	// checkpoint's kind says which), "poll" otherwise.
	Source string `json:"source"`
	Leader string `json:"leader,omitempty"`
	Epoch  uint64 `json:"epoch"`
	// LeaseLeft is the time until the leader's lease ends unless renewed;
	// negative when it ended.
	LeaseLeft time.Duration `json:"lease_left_ns"`
	Position  string        `json:"position"`
	// CheckpointAge is the time since the position last moved; 0 before
	// it ever did.
	CheckpointAge time.Duration `json:"checkpoint_age_ns"`
	// WatermarkAge is how far the watermark lags the clock: the untouched
	// rows written before it are published (docs/design.md, section 9.3);
	// 0 before it was ever set.
	WatermarkAge time.Duration `json:"watermark_age_ns"`
	// Slots are the database's logical replication slots (PostgreSQL):
	// the WAL source's, and any other left in it. A slot keeps the
	// server's WAL until its reader confirms it: its retained bytes grow
	// while no relay streams (docs/runbooks/growing-slot.md).
	Slots []store.ReplicationSlot `json:"replication_slots,omitempty"`
}

// walPositionPrefix starts the checkpoint of the WAL source (package
// store/postgres/wal's positions).
const walPositionPrefix = "pg-lsn:"

// ConfigurationStop is the claimable events whose last release was a Kafka
// configuration failure of one class (docs/security.md): charged nothing,
// logged nowhere else, waiting for an operator to fix the configuration.
type ConfigurationStop struct {
	Class  string `json:"class"`
	Events int64  `json:"events"`
	// OldestAge is the time since the oldest one occurred.
	OldestAge time.Duration `json:"oldest_age_ns"`
}

// Report is what `herald status` prints (its --json) and the console's
// overview shows: one source of truth for both.
type Report struct {
	At      time.Time     `json:"at"`
	Backlog store.Backlog `json:"backlog"`
	// DeliveryDelay is from occurred_at to publication, over the newest
	// events published in the last hour.
	DeliveryDelay store.DeliveryDelay `json:"delivery_delay"`
	// ConfigurationStops are Backlog.ReadyByClass's configuration
	// classes, by class.
	ConfigurationStops []ConfigurationStop `json:"configuration_stops"`
	Relays             []Relay             `json:"relays"`
	FreeBuckets        int                 `json:"free_buckets"`
	Stream             *Stream             `json:"stream,omitempty"`
	// CopiedTables are the foreign outbox tables whose inserts a trigger
	// copies into outbox_events (herald migrate up --mapping), by name.
	CopiedTables []migrations.InstalledMapping `json:"copied_tables"`
	// Quarantined is the oldest quarantined events (QuarantineShownDefault).
	Quarantined []store.QuarantinedEvent `json:"quarantined"`
	// Topics are the topics the Kafka part is about.
	Topics     []string                `json:"topics,omitempty"`
	Partitions []kafka.PartitionOffset `json:"partitions,omitempty"`
	// MissingTopics are topics Kafka does not have (yet): the relay cannot
	// publish to them (herald topics create).
	MissingTopics []string             `json:"missing_topics,omitempty"`
	Lag           []kafka.PartitionLag `json:"consumer_lag,omitempty"`
	// KafkaError says why the Kafka part is missing or incomplete.
	KafkaError string `json:"kafka_error,omitempty"`
}

// Read gathers the database's part of a report through the store: the
// backlog, the configuration stops, the relays and their leases, the
// stream, the copied tables, the oldest quarantined events.
func Read(ctx context.Context, st *store.Store) (Report, error) {
	rep := Report{At: time.Now().UTC(), ConfigurationStops: []ConfigurationStop{}, Quarantined: []store.QuarantinedEvent{},
		CopiedTables: []migrations.InstalledMapping{}}
	// The readings are independent: on connections of their own, the
	// report takes as long as the slowest (the backlog's and the
	// quarantine's each read every quarantined row), not their sum.
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		errs       []error
		quarantine []store.QuarantinedEvent
	)
	read := func(what string, f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				mu.Unlock()
			}
		})
	}
	read("backlog", func() (err error) { rep.Backlog, err = st.ReadBacklog(ctx); return err })
	read("delivery delay", func() (err error) { rep.DeliveryDelay, err = st.ReadDeliveryDelay(ctx); return err })
	read("relays", func() (err error) { rep.Relays, rep.FreeBuckets, err = relays(ctx, st); return err })
	read("stream", func() (err error) { rep.Stream, err = stream(ctx, st); return err })
	var copies map[string]migrations.InstalledMapping
	read("copied tables", func() (err error) { copies, err = migrations.ReadMappings(ctx, st.DB()); return err })
	var slots []store.ReplicationSlot
	read("replication slots", func() (err error) { slots, _, err = st.ReplicationSlots(ctx); return err })
	read("quarantine", func() (err error) {
		quarantine, err = st.ListQuarantined(ctx, store.QuarantineFilter{Limit: QuarantineShownDefault})
		return err
	})
	wg.Wait()
	if len(errs) > 0 {
		return rep, errors.Join(errs...)
	}
	if len(slots) > 0 {
		if rep.Stream == nil {
			rep.Stream = &Stream{Source: "poll"}
		}
		rep.Stream.Slots = slots
	}
	if quarantine != nil {
		rep.Quarantined = quarantine
	}
	for _, table := range slices.Sorted(maps.Keys(copies)) {
		rep.CopiedTables = append(rep.CopiedTables, copies[table])
	}
	for class, c := range rep.Backlog.ReadyByClass {
		if kafka.IsConfiguration(class) {
			rep.ConfigurationStops = append(rep.ConfigurationStops, ConfigurationStop{Class: class, Events: c.Events, OldestAge: c.OldestAge})
		}
	}
	sort.Slice(rep.ConfigurationStops, func(i, j int) bool { return rep.ConfigurationStops[i].Class < rep.ConfigurationStops[j].Class })
	return rep, nil
}

// ReadKafka adds the Kafka part: the end offset of every partition of
// topics, the topics Kafka lacks, and the lag of groups (every group
// reading the topics when none is named). A failure is recorded in
// KafkaError and returned.
func (r *Report) ReadKafka(ctx context.Context, adm *kadm.Client, topics, groups []string) error {
	ctx, cancel := context.WithTimeout(ctx, KafkaTimeoutDefault)
	defer cancel()
	r.Topics = slices.Clone(topics)
	var present []string
	for _, topic := range topics {
		offs, err := kafka.EndOffsets(ctx, adm, topic)
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			r.MissingTopics = append(r.MissingTopics, topic)
			continue
		case err != nil:
			return r.KafkaFailed(err)
		}
		r.Partitions = append(r.Partitions, offs...)
		present = append(present, topic)
	}
	if len(present) == 0 {
		return nil
	}
	lag, err := kafka.GroupLags(ctx, adm, groups, present...)
	if err != nil {
		return r.KafkaFailed(err)
	}
	r.Lag = lag
	return nil
}

// KafkaFailed records why the Kafka part is missing and returns err.
func (r *Report) KafkaFailed(err error) error {
	r.KafkaError = err.Error()
	return err
}

// stream reads the change stream's row.
func stream(ctx context.Context, st *store.Store) (*Stream, error) {
	l, now, err := st.Stream(ctx)
	if err != nil {
		return nil, err
	}
	if l.Epoch == 0 {
		return nil, nil // no relay ever streamed
	}
	s := &Stream{Source: "poll", Leader: l.Leader, Epoch: l.Epoch, Position: l.Position}
	if l.Leader != "" {
		s.LeaseLeft = l.Expires.Sub(now)
		if s.LeaseLeft > 0 {
			s.Source = "binlog"
			if strings.HasPrefix(l.Position, walPositionPrefix) {
				s.Source = "wal"
			}
		}
	}
	if !l.CheckpointedAt.IsZero() {
		s.CheckpointAge = now.Sub(l.CheckpointedAt)
	}
	if !l.Watermark.IsZero() {
		s.WatermarkAge = now.Sub(l.Watermark)
	}
	return s, nil
}

// relays groups the bucket table by owner.
func relays(ctx context.Context, st *store.Store) ([]Relay, int, error) {
	now, leases, err := st.Buckets(ctx)
	if err != nil {
		return nil, 0, err
	}
	byOwner := map[string]*Relay{}
	free := store.BucketCount - len(leases) // rows not created yet: no relay ever ran
	for _, l := range leases {
		if l.Owner == "" {
			free++
			continue
		}
		r := byOwner[l.Owner]
		if r == nil {
			r = &Relay{RelayID: l.Owner, LeaseLeft: l.Expires.Sub(now), LeaseExpires: l.Expires}
			byOwner[l.Owner] = r
		}
		r.Buckets++
		r.Epoch = max(r.Epoch, l.Epoch)
		if left := l.Expires.Sub(now); left < r.LeaseLeft {
			r.LeaseLeft, r.LeaseExpires = left, l.Expires
		}
	}
	out := []Relay{}
	for _, r := range byOwner {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RelayID < out[j].RelayID })
	return out, free, nil
}
