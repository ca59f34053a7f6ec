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
}
