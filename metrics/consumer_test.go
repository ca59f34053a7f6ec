package metrics_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConsumerSeriesMove runs an inbox consumer over a real topic: a
// redelivered event raises duplicate hits, a malformed record raises the
// DLQ counter, and the lag gauge returns to 0.
func TestConsumerSeriesMove(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	ctx := context.Background()

	id := uuid.Must(uuid.NewV7()).String()
	data, _ := json.Marshal(contract.OrderCreatedV1{OrderID: 1, CustomerID: 2, TotalAmount: "1.00",
		Items: []contract.OrderItem{{SKU: "S", Quantity: 1, UnitPrice: "1.00"}}})
	value, err := envelope.Encode(envelope.Envelope{EventID: id, Type: contract.TypeOrderCreated, Version: 1,
		OccurredAt: time.Now(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx,
		&kgo.Record{Key: []byte("1"), Value: value},
		&kgo.Record{Key: []byte("1"), Value: value}, // redelivered
		&kgo.Record{Key: []byte("1"), Value: []byte("{not json")},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	const name = "metrics-test"
	obs := metrics.NewConsumer(reg, name)
	c, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: name, Group: topic + "-group", Brokers: brokers, Topics: []string{topic}, DB: d.DB,
		Registry: contract.NewRegistry(), Observer: obs,
		Handler: inbox.HandlerFunc(func(context.Context, *sql.Tx, inbox.Message) error { return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})

	adm := testenv.NewAdmin(t, brokers)
	lag := metrics.NewConsumerLag(reg, adm, topic+"-group", []string{topic}, time.Hour, nil)
	testenv.Eventually(t, time.Minute, "one processed, one duplicate, one dead letter, lag 0", func() bool {
		metrics.SampleLag(ctx, lag)
		return gather(t, reg, "herald_consumer_processed_total", map[string]string{"consumer": name}) == 1 &&
			gather(t, reg, "herald_consumer_duplicates_total", map[string]string{"consumer": name, "topic": topic}) == 1 &&
			gather(t, reg, "herald_consumer_dlq_total", map[string]string{"class": envelope.ClassMalformed}) == 1 &&
			sumGauge(t, reg, "herald_consumer_lag") == 0
	})
	if got := gather(t, reg, "herald_consumer_handler_duration_seconds", nil); got != 1 {
		t.Errorf("handler latency histogram has %v samples, want 1", got)
	}
	// No retry happened; the retry counter's series appears with its first.
	obs.Retried(topic, 0, inbox.RetryTransient)
	checkDocumented(t, reg, "herald_consumer_")
}

func sumGauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := -1.0
	for _, f := range families {
		if f.GetName() == name {
			sum = 0
			for _, m := range f.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
