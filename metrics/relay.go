package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// Relay implements relay.Observer with Prometheus collectors.
type Relay struct {
	claims          prometheus.Counter
	claimDuration   prometheus.Histogram
	batchSize       prometheus.Histogram
	held            prometheus.Counter
	bucketsOwned    prometheus.Gauge
	takeovers       prometheus.Counter
	streamLeader    prometheus.Gauge
	streamEvents    prometheus.Counter
	handedOver      prometheus.Counter
	streamLag       *prometheus.GaugeVec
	checkpointAt    atomic.Int64 // unix nanoseconds of the last checkpoint, 0 before one
	delivery        *prometheus.HistogramVec
	lostLeases      prometheus.Counter
	published       *prometheus.CounterVec
	publishDuration prometheus.Histogram
	attempts        prometheus.Counter
	failures        *prometheus.CounterVec
	quarantined     prometheus.Counter
	configuration   *prometheus.GaugeVec
	info            *prometheus.GaugeVec
	sweeps          *prometheus.CounterVec
}

// NewRelay registers the relay's collectors on reg.
func NewRelay(reg prometheus.Registerer) *Relay {
	f := factory{reg}
	m := &Relay{
		claims: f.counter("herald_relay_claims_total", "Claims run (including empty ones)."),
		claimDuration: f.histogram("herald_relay_claim_duration_seconds",
			"Duration of one claim.", prometheus.ExponentialBuckets(0.0005, 2, 14)),
		batchSize: f.histogram("herald_relay_batch_size",
			"Events taken by one claim.", []float64{0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}),
		held: f.counter("herald_relay_held_total",
			"Candidates held behind an earlier event of their aggregate that backs off or is quarantined."),
		bucketsOwned: f.gauge("herald_relay_buckets_owned",
			"Buckets this relay owns (of 64): it claims only their events."),
		takeovers: f.counter("herald_relay_bucket_takeovers_total",
			"Buckets this relay took over from a relay whose lease had expired (died, hung or lost the database)."),
		streamLeader: f.gauge("herald_relay_stream_leader",
			"1 while this relay leads the change stream (binlog or WAL), else 0."),
		streamEvents: f.counter("herald_relay_stream_events_total",
			"Events this relay read from the change stream while it led."),
		handedOver: f.counter("herald_relay_stream_handed_over_total",
			"Stream events handed to the polling path (held behind an earlier event that is not done)."),
		streamLag: f.gaugeVec("herald_relay_stream_lag",
			"How far the change stream is behind the server's head (binlog or WAL), by unit: seconds, bytes (-1 when unknown).", "unit"),
		delivery: f.histogramVec("herald_relay_delivery_delay_seconds",
			"From an event's occurred_at to Kafka's acknowledgement, by source: poll or stream.",
			prometheus.ExponentialBuckets(0.001, 2, 18), "source"),
		lostLeases: f.counter("herald_relay_lost_leases_total",
			"Events this relay could not settle because another relay had taken over their bucket."),
		published: f.counterVec("herald_relay_published_total",
			"Records acknowledged by Kafka, by topic and partition (partition hotspots).", "topic", "partition"),
		publishDuration: f.histogram("herald_relay_publish_duration_seconds",
			"Time to produce one claimed batch until every record is acknowledged or failed.",
			prometheus.ExponentialBuckets(0.001, 2, 16)),
		attempts: f.counter("herald_relay_publish_attempts_total",
			"Records produced (acknowledged or failed); the failure rate is failures_total / this."),
		failures: f.counterVec("herald_relay_failures_total",
			"Failed publications by error class.", "class"),
		quarantined: f.counter("herald_relay_quarantined_total", "Events quarantined by this relay."),
		configuration: f.gaugeVec("herald_relay_configuration_failure",
			"1 while a Kafka configuration failure of this class (authentication, tls, authorization, configuration) stops publishing.", "class"),
		info: f.gaugeVec("herald_relay_info",
			"1, labelled with the source this relay reads: poll or stream (binlog, WAL).", "source"),
		sweeps: f.counterVec("herald_relay_stream_sweeps_total",
			"Sweeps of the outbox through the polling path before streaming, by reason: start (no checkpoint yet) or position_lost (the checkpoint was no longer on the server).", "reason"),
	}
	for _, class := range kafka.ConfigurationClasses() {
		m.configuration.WithLabelValues(class).Set(0)
	}
	// Every series an alert takes increase() of starts at 0: a counter that
	// appears at 1 shows Prometheus no increase.
	for _, class := range kafka.Classes() {
		if !kafka.IsConfiguration(class) {
			m.failures.WithLabelValues(class)
		}
	}
	for _, reason := range []string{sweepStart, sweepPositionLost} {
		m.sweeps.WithLabelValues(reason)
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_relay_stream_checkpoint_age_seconds",
		Help: "Time since this relay last moved the change stream's checkpoint (0 before it did)."},
		func() float64 {
			at := m.checkpointAt.Load()
			if at == 0 {
				return 0
			}
			return time.Since(time.Unix(0, at)).Seconds()
		}))
	return m
}

// Claimed implements relay.Observer.
func (m *Relay) Claimed(c store.Claim) {
	m.claims.Inc()
	m.claimDuration.Observe(c.Duration.Seconds())
	m.batchSize.Observe(float64(len(c.Events)))
	m.held.Add(float64(c.Held))
}

// Rebalanced implements relay.RebalanceObserver.
func (m *Relay) Rebalanced(rb store.Rebalance) {
	m.bucketsOwned.Set(float64(len(rb.Ownership.Buckets)))
	m.takeovers.Add(float64(rb.TakenOver))
	if rb.Leading {
		m.streamLeader.Set(1)
	} else {
		m.streamLeader.Set(0)
	}
}

// Streamed implements relay.StreamObserver.
func (m *Relay) Streamed(events, handedOver int, lagBytes int64, lagSeconds float64) {
	m.streamEvents.Add(float64(events))
	m.handedOver.Add(float64(handedOver))
	m.streamLag.WithLabelValues("seconds").Set(lagSeconds)
	m.streamLag.WithLabelValues("bytes").Set(float64(lagBytes))
}

// Checkpointed implements relay.StreamObserver.
func (m *Relay) Checkpointed(at time.Time) { m.checkpointAt.Store(at.UnixNano()) }

// Delivered implements relay.DeliveryObserver.
func (m *Relay) Delivered(source string, delay time.Duration) {
	m.delivery.WithLabelValues(source).Observe(delay.Seconds())
}

// Published implements relay.Observer.
func (m *Relay) Published(topic string, partition int32, records int) {
	m.published.WithLabelValues(topic, strconv.Itoa(int(partition))).Add(float64(records))
}

// PublishedBatch implements relay.Observer.
func (m *Relay) PublishedBatch(d time.Duration, records int) {
	m.publishDuration.Observe(d.Seconds())
	m.attempts.Add(float64(records))
}

// Failed implements relay.Observer.
func (m *Relay) Failed(class string, quarantined bool) {
	m.failures.WithLabelValues(class).Inc()
	if quarantined {
		m.quarantined.Inc()
	}
}

// ConfigurationFailure implements relay.ConfigurationObserver: class is
// the failure now stopping publishing, "" when it resumed.
func (m *Relay) ConfigurationFailure(class string) {
	for _, c := range kafka.ConfigurationClasses() {
		v := 0.0
		if c == class {
			v = 1
		}
		m.configuration.WithLabelValues(c).Set(v)
	}
}

// Started implements relay.SourceObserver.
func (m *Relay) Started(source string) {
	m.info.Reset()
	m.info.WithLabelValues(source).Set(1)
}

// The reason label of herald_relay_stream_sweeps_total.
const (
	sweepStart        = "start"         // the stream had no checkpoint yet
	sweepPositionLost = "position_lost" // a purged binlog, a dropped or invalidated slot
)

// Swept implements relay.SweepObserver.
func (m *Relay) Swept(positionLost bool, _ int) {
	reason := sweepStart
	if positionLost {
		reason = sweepPositionLost
	}
	m.sweeps.WithLabelValues(reason).Inc()
}

// Settled implements relay.Observer.
func (m *Relay) Settled(s store.Settled) {
	m.lostLeases.Add(float64(s.LostLeases))
}

// factory registers collectors as it makes them.
type factory struct{ reg prometheus.Registerer }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
