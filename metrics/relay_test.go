package metrics_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func addEvent(t *testing.T, d *testenv.Database, aggregateID string, payloadBytes int) string {
	t.Helper()
	// Random bytes: the producer compresses, and a repetitive payload would
	// shrink below the topic's max.message.bytes.
	pad := make([]byte, payloadBytes*3/4)
	rand.Read(pad)
	payload, _ := json.Marshal(map[string]string{"pad": base64.StdEncoding.EncodeToString(pad)})
	return testenv.AddEvents(t, d.DB, outbox.Event{AggregateType: "order", AggregateID: aggregateID,
		EventType: "order.created", SchemaVersion: 1, Payload: payload})[0]
}

// gather returns the value of one series, or -1 when it is absent.
func gather(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

// TestRelayAndBacklogSeriesMove drives a real relay over MariaDB and Kafka
// through the situations the metrics describe and checks each series moves
// the way the situation says.
func TestRelayAndBacklogSeriesMove(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	maxBytes := "20000"
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3,
		Configs: map[string]*string{"max.message.bytes": &maxBytes}})
	st := mysql.NewStore(d.DB)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	backlog := metrics.NewBacklog(reg, st, time.Hour, nil)

	// A claimable event nobody claims: its age grows.
	for i := range 6 {
		addEvent(t, d, fmt.Sprint("agg-", i), 100)
	}
	poison := addEvent(t, d, "poison", 50_000)
	behind := addEvent(t, d, "poison", 100)
	// A relay that died owning every bucket, to be taken over.
	testenv.Claim(t, st, "dead-relay", time.Second, 1)
	metrics.SampleBacklog(ctx, backlog)
	first := gather(t, reg, "herald_outbox_oldest_age_seconds", map[string]string{"state": "claimable"})
	testenv.Eventually(t, time.Minute, "the claimable age to grow", func() bool {
		metrics.SampleBacklog(ctx, backlog)
		return gather(t, reg, "herald_outbox_oldest_age_seconds", map[string]string{"state": "claimable"}) > first+0.2
	})

	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	r, err := relay.New(relay.Config{ID: "metrics-relay", Topics: map[string]string{"order": topic},
		Lease: 15 * time.Second, PollInterval: 20 * time.Millisecond, Observer: metrics.NewRelay(reg)}, st, producer)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})

	// The observer hears of a batch before its outcome is committed: wait
	// for the database to agree as well.
	testenv.Eventually(t, time.Minute, "6 events published and the poison event quarantined", func() bool {
		metrics.SampleBacklog(ctx, backlog)
		return gather(t, reg, "herald_relay_quarantined_total", nil) == 1 &&
			sumSeries(t, reg, "herald_relay_published_total") == 6 &&
			gather(t, reg, "herald_outbox_events", map[string]string{"state": "quarantined"}) == 1
	})
	// Kafka refuses the whole partition batch, so the poison event's first
	// failure may take innocent records along; they succeed when retried,
	// and only the poison event's failure in isolation quarantines it.
	if got := gather(t, reg, "herald_relay_failures_total", map[string]string{"class": kafka.ClassTooLarge}); got < 2 {
		t.Errorf("failures_total{class=too_large} = %v, want at least 2 (first try, then alone)", got)
	}
	if got := gather(t, reg, "herald_relay_bucket_takeovers_total", nil); got != store.BucketCount {
		t.Errorf("bucket_takeovers_total = %v, want %d (every bucket of the dead relay)", got, store.BucketCount)
	}
	if got := gather(t, reg, "herald_relay_buckets_owned", nil); got != store.BucketCount {
		t.Errorf("buckets_owned = %v, want %d", got, store.BucketCount)
	}
	if got := gather(t, reg, "herald_relay_publish_attempts_total", nil); got < 7 {
		t.Errorf("publish_attempts_total = %v, want at least 7", got)
	}
	if got := gather(t, reg, "herald_relay_claim_duration_seconds", nil); got < 1 {
		t.Errorf("claim duration histogram has %v samples", got)
	}

	metrics.SampleBacklog(ctx, backlog)
	for state, want := range map[string]float64{"ready": 0, "quarantined": 1, "held": 1} {
		if got := gather(t, reg, "herald_outbox_events", map[string]string{"state": state}); got != want {
			t.Errorf("herald_outbox_events{state=%q} = %v, want %v", state, got, want)
		}
	}
	if got := gather(t, reg, "herald_outbox_held_aggregates", nil); got != 1 {
		t.Errorf("held_aggregates = %v, want 1 (the poison aggregate)", got)
	}
	if got := gather(t, reg, "herald_outbox_oldest_age_seconds", map[string]string{"state": "quarantined"}); got <= 0 {
		t.Errorf("oldest quarantined age = %v, want > 0", got)
	}
	if got := gather(t, reg, "herald_outbox_oldest_age_seconds", map[string]string{"state": "claimable"}); got != 0 {
		t.Errorf("oldest claimable age = %v after the drain, want 0", got)
	}
	if got := gather(t, reg, "herald_outbox_pending_events", nil); got != 1 {
		t.Errorf("pending = %v, want 1 (the held event; quarantined is not pending)", got)
	}
	if list, _ := st.ListQuarantined(ctx, store.QuarantineFilter{}); len(list) != 1 || list[0].ID != poison || list[0].HeldBehind != 1 {
		t.Errorf("quarantined: %+v, want only the poison event %s with %s held behind it", list, poison, behind)
	}
	if n := testutil.CollectAndCount(reg); n == 0 {
		t.Fatal("registry is empty")
	}
}

func sumSeries(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
