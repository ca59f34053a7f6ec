package metrics

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
)

// Consumer implements inbox.Observer with Prometheus collectors for one
// named consumer.
type Consumer struct {
	processed  *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	dlq        *prometheus.CounterVec
	retries    *prometheus.CounterVec
	handler    prometheus.Observer
	name       string
}

// NewConsumer registers the consumer's collectors on reg; consumer is the
// value of their consumer label.
func NewConsumer(reg prometheus.Registerer, consumer string) *Consumer {
	f := factory{reg}
	m := &Consumer{
		name: consumer,
		processed: f.counterVec("herald_consumer_processed_total",
			"Records whose inbox transaction committed (first deliveries).", "consumer", "topic"),
		duplicates: f.counterVec("herald_consumer_duplicates_total",
			"Records whose event id the inbox already held: absorbed duplicates.", "consumer", "topic"),
		dlq: f.counterVec("herald_consumer_dlq_total",
			"Records sent to the dead-letter topic, by class.", "consumer", "class"),
		retries: f.counterVec("herald_consumer_retries_total",
			"Transactions retried, by class (handler, transient, database).", "consumer", "class"),
		handler: f.histogramVec("herald_consumer_handler_duration_seconds",
			"Handler run time of a successful attempt.", prometheus.ExponentialBuckets(0.0001, 2, 16), "consumer").
			WithLabelValues(consumer),
	}
	// The dead-letter alert takes increase(): a class's first record must
	// move its series from 0, not create it at 1.
	for _, class := range []string{envelope.ClassMalformed, envelope.ClassMissingID, envelope.ClassUnknownType,
		envelope.ClassUnsupportedVersion, inbox.ClassHandler} {
		m.dlq.WithLabelValues(consumer, class)
	}
	return m
}

// Processed implements inbox.Observer.
func (m *Consumer) Processed(topic string, _ int32, handlerLatency time.Duration) {
	m.processed.WithLabelValues(m.name, topic).Inc()
	// The duplicate rate's series exists from the topic's first record, at
	// 0, so the dashboard and rate() show a quiet consumer's 0.
	m.duplicates.WithLabelValues(m.name, topic)
	m.handler.Observe(handlerLatency.Seconds())
}

// Duplicate implements inbox.Observer.
func (m *Consumer) Duplicate(topic string, _ int32) {
	m.duplicates.WithLabelValues(m.name, topic).Inc()
	m.processed.WithLabelValues(m.name, topic)
}

// DeadLettered implements inbox.Observer.
func (m *Consumer) DeadLettered(_ string, _ int32, class string) {
	m.dlq.WithLabelValues(m.name, class).Inc()
}

// Retried implements inbox.Observer.
func (m *Consumer) Retried(_ string, _ int32, class string) {
	m.retries.WithLabelValues(m.name, class).Inc()
}

// LagIntervalDefault is how often consumer lag is read from Kafka.
const LagIntervalDefault = 15 * time.Second

// ConsumerLag reads a group's lag per topic and partition from Kafka every
// interval (never per scrape).
type ConsumerLag struct {
	adm      *kadm.Client
	group    string
	topics   []string
	interval time.Duration
	log      *slog.Logger
	lag      *prometheus.GaugeVec
	errors   prometheus.Counter
}

// NewConsumerLag registers the lag gauge on reg.
func NewConsumerLag(reg prometheus.Registerer, adm *kadm.Client, group string, topics []string, interval time.Duration, log *slog.Logger) *ConsumerLag {
	if interval <= 0 {
		interval = LagIntervalDefault
	}
	if log == nil {
		log = slog.Default()
	}
	f := factory{reg}
	return &ConsumerLag{
		adm: adm, group: group, topics: topics, interval: interval, log: log,
		lag: f.gaugeVec("herald_consumer_lag",
			"Records between the group's committed offset and the partition's end.", "group", "topic", "partition"),
		errors: f.counter("herald_consumer_lag_sample_errors_total", "Failed consumer lag readings."),
	}
}

// Run samples until ctx is cancelled.
func (c *ConsumerLag) Run(ctx context.Context) error {
	for {
		c.runOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.interval):
		}
	}
}

func (c *ConsumerLag) runOnce(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, c.interval)
	defer cancel()
	_, lags, err := kafka.GroupLag(qctx, c.adm, c.group, c.topics...)
	if err != nil {
		if ctx.Err() == nil {
			c.errors.Inc()
			c.log.Warn("consumer lag reading failed", "group", c.group, "error", err)
		}
		return
	}
	for _, l := range lags {
		c.lag.WithLabelValues(c.group, l.Topic, strconv.Itoa(int(l.Partition))).Set(float64(l.Lag))
	}
}
