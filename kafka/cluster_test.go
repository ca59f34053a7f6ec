//go:build cluster

package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestClusterMinInsyncReplicas runs on the three-broker stack
// (`make test-cluster`). With replication factor 3 and min.insync.replicas=2,
// losing one broker keeps acks=all writes working; losing a second makes them
// fail with NOT_ENOUGH_REPLICAS instead of silently succeeding on one copy.
func TestClusterMinInsyncReplicas(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	admin := testenv.NewAdmin(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	meta, err := admin.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 3 {
		t.Fatalf("cluster has %d brokers, want 3: run `KAFKA_BROKERS=3 make up`", len(meta.Brokers))
	}

	minISR := "2"
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{
		Partitions:        3,
		ReplicationFactor: 3,
		Configs:           map[string]*string{"min.insync.replicas": &minISR},
	})

	// The producer gives up after a few retries so a refused write surfaces
	// as an error rather than being retried until the test's deadline.
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent writes are franz-go's default
		kgo.DefaultProduceTopic(topic),
		kgo.RecordRetries(4),
		kgo.RecordDeliveryTimeout(45*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(key string) error {
		var rs []*kgo.Record
		for i := range 12 { // twelve keys reach all three partitions
			k := fmt.Sprintf("%s-%d", key, i)
			rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte(k)})
		}
		return producer.ProduceSync(ctx, rs...).FirstErr()
	}
	if err := produce("all-up"); err != nil {
		t.Fatalf("produce with 3 brokers: %v", err)
	}

	t.Cleanup(func() { testenv.StackNode(t, "start", "kafka-3") })
	testenv.StackNode(t, "stop", "kafka-3")
	if err := produce("one-down"); err != nil {
		t.Fatalf("produce with 2 of 3 brokers (min.insync.replicas=2): %v", err)
	}

	t.Cleanup(func() { testenv.StackNode(t, "start", "kafka-2") })
	testenv.StackNode(t, "stop", "kafka-2")
	err = produce("two-down")
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("produce with 1 of 3 brokers: got %v, want NOT_ENOUGH_REPLICAS", err)
	}
	t.Logf("with one broker left, acks=all is refused: %v", err)
}
