package kafka_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestBrokerRoundTrip produces 1,000 keyed records with acks=all and the
// idempotent producer to a 12-partition topic, reads every one back through
// a consumer group, and asks kcat, a client nobody here wrote, whether the
// topic is there with its 12 partitions.
func TestBrokerRoundTrip(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 12})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent writes are franz-go's default
		kgo.DefaultProduceTopic(topic),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	const n = 1000
	records := make([]*kgo.Record, n)
	for i := range records {
		records[i] = &kgo.Record{
			Key:   []byte(fmt.Sprintf("aggregate-%d", i%100)),
			Value: []byte(fmt.Sprintf("event-%d", i)),
		}
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	partitionOfKey := map[string]int32{}
	for _, r := range records {
		if p, seen := partitionOfKey[string(r.Key)]; seen && p != r.Partition {
			t.Errorf("key %s went to partitions %d and %d", r.Key, p, r.Partition)
		}
		partitionOfKey[string(r.Key)] = r.Partition
	}

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(topic+"-readers"),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back %d of %d records before the deadline", len(seen), n)
		}
		fetches.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("record %s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
		if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit offsets: %v", err)
		}
	}

	out, err := exec.CommandContext(ctx, "kcat", "-b", strings.Join(brokers, ","), "-L", "-t", topic).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("topic \"%s\" with 12 partitions", topic); !strings.Contains(string(out), want) {
		t.Errorf("kcat does not list %q:\n%s", want, out)
	}
}
