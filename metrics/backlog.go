package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-outbox/herald/store"
)

// BacklogIntervalDefault is how often the backlog is read.
const BacklogIntervalDefault = 15 * time.Second

// BacklogReader reads the outbox's backlog; *store.Store implements it.
type BacklogReader interface {
	ReadBacklog(ctx context.Context) (store.Backlog, error)
}

// SlotReader reads the database's replication slots; *store.Store
// implements it (none on MariaDB/MySQL).
type SlotReader interface {
	ReplicationSlots(ctx context.Context) ([]store.ReplicationSlot, bool, error)
}

// Backlog samples the outbox at a bounded rate (indexed queries every
// interval, never one per scrape) into gauges.
type Backlog struct {
	reader    BacklogReader
	interval  time.Duration
	log       *slog.Logger
	events    *prometheus.GaugeVec
	pending   prometheus.Gauge
	oldest    *prometheus.GaugeVec
	heldAggs  prometheus.Gauge
	sampledAt prometheus.Gauge
	errors    prometheus.Counter
	// The replication slots' gauges, by slot (PostgreSQL's WAL source).
	slotRetained *prometheus.GaugeVec
	slotLag      *prometheus.GaugeVec
	slotSafe     *prometheus.GaugeVec
	slotActive   *prometheus.GaugeVec
	slotLost     *prometheus.GaugeVec
}

// NewBacklog registers the backlog gauges on reg; Run fills them every
// interval (0: BacklogIntervalDefault).
func NewBacklog(reg prometheus.Registerer, reader BacklogReader, interval time.Duration, log *slog.Logger) *Backlog {
	if interval <= 0 {
		interval = BacklogIntervalDefault
	}
	if log == nil {
		log = slog.Default()
	}
	f := factory{reg}
	return &Backlog{
		reader: reader, interval: interval, log: log,
		events: f.gaugeVec("herald_outbox_events",
			"Unpublished outbox events by state: ready (including those in flight), backing_off, held, quarantined, discarded.", "state"),
		pending: f.gauge("herald_outbox_pending_events",
			"Events still to publish: ready + backing_off + held (quarantined excluded)."),
		oldest: f.gaugeVec("herald_outbox_oldest_age_seconds",
			"Age of the oldest unpublished event since it occurred, whatever retries and releases happened: "+
				"claimable, parked (backing off or held), quarantined.", "state"),
		heldAggs: f.gauge("herald_outbox_held_aggregates",
			"Aggregates whose later events are held back behind a failing, quarantined or in-flight event."),
		sampledAt: f.gauge("herald_outbox_backlog_sampled_timestamp_seconds",
			"When the backlog gauges were last read from the database."),
		errors: f.counter("herald_outbox_backlog_sample_errors_total", "Failed backlog readings."),
		slotRetained: f.gaugeVec("herald_stream_slot_retained_bytes",
			"WAL the database's logical replication slot keeps on the server (PostgreSQL, --source wal), by slot.", "slot"),
		slotLag: f.gaugeVec("herald_stream_slot_lag_bytes",
			"How far the slot's confirmed position (the stream's checkpoint) is behind the server's WAL, by slot.", "slot"),
		slotSafe: f.gaugeVec("herald_stream_slot_safe_wal_bytes",
			"WAL the slot may still retain before max_slot_wal_keep_size invalidates it (-1: no limit), by slot.", "slot"),
		slotActive: f.gaugeVec("herald_stream_slot_active",
			"1 while a connection streams from the slot, else 0, by slot.", "slot"),
		slotLost: f.gaugeVec("herald_stream_slot_invalidated",
			"1 when the server invalidated the slot (wal_status lost: past max_slot_wal_keep_size), else 0, by slot.", "slot"),
	}
}

// Run samples until ctx is cancelled.
func (b *Backlog) Run(ctx context.Context) error {
	for {
		b.runOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(b.interval):
		}
	}
}

func (b *Backlog) runOnce(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, b.interval)
	defer cancel()
	bl, err := b.reader.ReadBacklog(qctx)
	if err != nil {
		if ctx.Err() == nil {
			b.errors.Inc()
			b.log.Warn("backlog reading failed", "error", err)
		}
		return
	}
	for state, n := range map[string]int64{
		"ready": bl.Ready, "backing_off": bl.BackingOff, "held": bl.Held,
		"quarantined": bl.Quarantined, "discarded": bl.Discarded,
	} {
		b.events.WithLabelValues(state).Set(float64(n))
	}
	b.pending.Set(float64(bl.Ready + bl.BackingOff + bl.Held))
	b.oldest.WithLabelValues("claimable").Set(bl.OldestReadyAge.Seconds())
	b.oldest.WithLabelValues("parked").Set(bl.OldestParkedAge.Seconds())
	b.oldest.WithLabelValues("quarantined").Set(bl.OldestQuarantinedAge.Seconds())
	b.heldAggs.Set(float64(bl.HeldAggregates))
	b.sampledAt.Set(float64(time.Now().Unix()))
	b.sampleSlots(qctx)
}

// sampleSlots fills the slots' gauges; a slot dropped since the last
// sample leaves them.
func (b *Backlog) sampleSlots(ctx context.Context) {
	r, ok := b.reader.(SlotReader)
	if !ok {
		return
	}
	slots, ok, err := r.ReplicationSlots(ctx)
	if !ok {
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			b.errors.Inc()
			b.log.Warn("replication slot reading failed", "error", err)
		}
		return
	}
	for _, v := range []*prometheus.GaugeVec{b.slotRetained, b.slotLag, b.slotSafe, b.slotActive, b.slotLost} {
		v.Reset()
	}
	for _, s := range slots {
		b.slotRetained.WithLabelValues(s.Name).Set(float64(s.RetainedBytes))
		b.slotLag.WithLabelValues(s.Name).Set(float64(s.LagBytes))
		b.slotSafe.WithLabelValues(s.Name).Set(float64(s.SafeWALBytes))
		active := 0.0
		if s.Active {
			active = 1
		}
		b.slotActive.WithLabelValues(s.Name).Set(active)
		lost := 0.0
		if s.Lost() {
			lost = 1
		}
		b.slotLost.WithLabelValues(s.Name).Set(lost)
	}
}
