package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestEnsureTopicRefusesKeyRemap: a topic is created with its partitions,
// replication and min.insync.replicas; asking again changes nothing;
// asking for more partitions is refused with an explanation unless the
// operator allows the key remap; fewer partitions are impossible.
func TestEnsureTopicRefusesKeyRemap(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	adm := testenv.NewAdmin(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rf := int16(min(len(meta.Brokers), kafka.TopicReplicationFactorDefault))
	isr := min(int(rf), kafka.TopicMinInsyncReplicasDefault)
	name := "herald-t-ensure-" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""))
	t.Cleanup(func() { adm.DeleteTopic(context.Background(), name) })
	spec := kafka.TopicSpec{Name: name, Partitions: kafka.TopicPartitionsDefault, ReplicationFactor: rf, MinInsyncReplicas: isr}

	if change, err := kafka.EnsureTopic(ctx, adm, spec, false); err != nil || change != kafka.TopicCreated {
		t.Fatalf("create: %v, %v", change, err)
	}
	testenv.WaitTopic(t, brokers, name, kafka.TopicPartitionsDefault)
	if change, err := kafka.EnsureTopic(ctx, adm, spec, false); err != nil || change != kafka.TopicUnchanged {
		t.Fatalf("create again: %v, %v; want unchanged", change, err)
	}
	descs, err := kafka.DescribeTopics(ctx, adm, name)
	if err != nil {
		t.Fatal(err)
	}
	if d := descs[0]; len(d.Partitions) != 12 || d.ReplicationFactor != int(rf) || d.Configs["min.insync.replicas"] == "" {
		t.Errorf("described %+v, want 12 partitions, replication %d and min.insync.replicas", d, rf)
	}

	grow := spec
	grow.Partitions = 24
	_, err = kafka.EnsureTopic(ctx, adm, grow, false)
	if !errors.Is(err, kafka.ErrKeyRemap) || !strings.Contains(err.Error(), "--allow-key-remap") ||
		!strings.Contains(err.Error(), "ordering") {
		t.Fatalf("growing without consent: %v; want ErrKeyRemap explaining keys and ordering", err)
	}
	if descs, _ := kafka.DescribeTopics(ctx, adm, name); len(descs[0].Partitions) != 12 {
		t.Fatalf("a refused change still changed the topic to %d partitions", len(descs[0].Partitions))
	}
	if change, err := kafka.EnsureTopic(ctx, adm, grow, true); err != nil || change != kafka.TopicGrown {
		t.Fatalf("growing with --allow-key-remap: %v, %v", change, err)
	}
	shrink := spec
	shrink.Partitions = 6
	if _, err := kafka.EnsureTopic(ctx, adm, shrink, true); err == nil {
		t.Error("shrinking a topic was accepted")
	}
}
