package kafka

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// EnsureReplayTopic creates the replay topic of live, if missing, with the
// live topic's partitions and replication, so keys land on the same
// partition numbers, and its max.message.bytes, so every record of the
// live topic fits (docs/runbooks/replay.md).
func EnsureReplayTopic(ctx context.Context, adm *kadm.Client, live, replay string) (TopicChange, error) {
	descs, err := DescribeTopics(ctx, adm, live)
	if err != nil {
		return "", fmt.Errorf("live topic %s: %w", live, err)
	}
	d := descs[0]
	minISR := min(TopicMinInsyncReplicasDefault, d.ReplicationFactor)
	if v, err := strconv.Atoi(d.Configs["min.insync.replicas"]); err == nil {
		minISR = v
	}
	configs := map[string]string{}
	if v, ok := d.Configs["max.message.bytes"]; ok {
		configs["max.message.bytes"] = v
	}
	return EnsureTopic(ctx, adm, TopicSpec{
		Name: replay, Partitions: int32(len(d.Partitions)), ReplicationFactor: int16(d.ReplicationFactor),
		MinInsyncReplicas: minISR, Configs: configs,
	}, false)
}
