package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/localstack"
)

// KafkaBrokers returns the seed brokers of the cluster named by
// HERALD_KAFKA_BROKERS (default: the local stack) once it answers a metadata
// request.
func KafkaBrokers(t testing.TB) []string {
	t.Helper()
	brokers := localstack.KafkaBrokers()
	admin := NewAdmin(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := admin.BrokerMetadata(ctx); err != nil {
		requireServer(t, "Kafka", err)
	}
	return brokers
}

// NewAdmin returns an admin client on brokers, closed when t ends.
func NewAdmin(t testing.TB, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TopicOptions shape a test topic. Zero values mean: 1 partition, the
// broker's default replication factor, no extra configs, a name starting
// with "herald-t-".
type TopicOptions struct {
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]*string
	// Prefix starts the topic's name; the local stack's ACLs let its
	// secured user have topics that start with "herald" only.
	Prefix string
}

// NewTopic creates a topic for t and deletes it when t ends.
func NewTopic(t testing.TB, brokers []string, opts TopicOptions) string {
	t.Helper()
	if opts.Partitions == 0 {
		opts.Partitions = 1
	}
	if opts.ReplicationFactor == 0 {
		opts.ReplicationFactor = -1
	}
	admin := NewAdmin(t, brokers)
	if opts.Prefix == "" {
		opts.Prefix = "herald-t-"
	}
	name := uniqueName(t, opts.Prefix, 200)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := admin.CreateTopic(ctx, opts.Partitions, opts.ReplicationFactor, opts.Configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.DeleteTopic(ctx, name); err != nil {
			t.Logf("delete topic %s: %v", name, err)
		}
	})
	return name
}
