package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/herald-outbox/herald/testkit/localstack"
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
	return kadm.NewClient(newClient(t, brokers))
}

// newClient returns a client of brokers, closed when t ends.
func newClient(t testing.TB, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
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
	// Suffix ends it, after the unique part: a test whose topic names are
	// derived (Debezium's route.topic.replacement) knows its tail.
	Suffix string
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
	cl := newClient(t, brokers)
	admin := kadm.NewClient(cl)
	if opts.Prefix == "" {
		opts.Prefix = "herald-t-"
	}
	name := uniqueName(t, opts.Prefix, 200-len(opts.Suffix)) + opts.Suffix
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
	waitTopicOnEveryBroker(t, cl, admin, name, opts.Partitions)
	return name
}

// WaitTopic waits until every broker of brokers has the topic a test
// created some other way (herald topics create) with its partitions.
func WaitTopic(t testing.TB, brokers []string, topic string, partitions int32) {
	t.Helper()
	cl := newClient(t, brokers)
	waitTopicOnEveryBroker(t, cl, kadm.NewClient(cl), topic, partitions)
}

// waitTopicOnEveryBroker waits until every broker's metadata has the new
// topic with a leader for each partition: brokers learn of a topic a
// moment apart, and a client asking one that has not yet (a describe, a
// produce) is told UNKNOWN_TOPIC_OR_PARTITION.
func waitTopicOnEveryBroker(t testing.TB, cl *kgo.Client, admin *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	WaitFor(t, 30*time.Second, "topic "+topic+" known to every broker", func() (bool, string) {
		brokers, err := admin.ListBrokers(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, b := range brokers {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil {
				return false, fmt.Sprintf("broker %d: %v", b.NodeID, err)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || int32(len(resp.Topics[0].Partitions)) != partitions {
				return false, fmt.Sprintf("broker %d does not have it yet", b.NodeID)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return false, fmt.Sprintf("broker %d: partition %d has no leader yet", b.NodeID, p.Partition)
				}
			}
		}
		return true, ""
	})
}
