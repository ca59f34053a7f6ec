package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Provisioning defaults for herald's topics.
const (
	TopicPartitionsDefault        = 12
	TopicReplicationFactorDefault = 3
	TopicMinInsyncReplicasDefault = 2
)

// ErrKeyRemap refuses to add partitions to an existing topic without the
// operator's explicit consent.
var ErrKeyRemap = errors.New("adding partitions remaps keys")

// TopicSpec is a topic as herald wants it.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int
	// Configs are further topic configs (e.g. retention.ms).
	Configs map[string]string
	// MaxRecordBytes, when set, is the largest record the topic must
	// accept (the relays' ProducerConfig.MaxRecordBytes): a new topic gets
	// it as max.message.bytes unless Configs sets one.
	MaxRecordBytes int
}

// TopicChange says what EnsureTopic did.
type TopicChange string

// What EnsureTopic can do to a topic.
const (
	TopicCreated   TopicChange = "created"
	TopicUnchanged TopicChange = "unchanged"
	TopicGrown     TopicChange = "partitions added"
)

// EnsureTopic creates spec's topic, or checks an existing one. An existing
// topic with fewer partitions is grown only when allowKeyRemap is true:
// Kafka picks a key's partition by hashing it modulo the partition count, so
// adding partitions sends existing aggregates to other partitions, and a
// consumer can then see an aggregate's new events before older ones still
// waiting on the old partition.
func EnsureTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec, allowKeyRemap bool) (TopicChange, error) {
	partitions, exists, err := topicPartitions(ctx, adm, spec.Name)
	if err != nil {
		return "", err
	}
	if !exists {
		configs := map[string]*string{}
		for k, v := range spec.Configs {
			configs[k] = &v
		}
		if spec.MinInsyncReplicas > 0 {
			isr := strconv.Itoa(spec.MinInsyncReplicas)
			configs["min.insync.replicas"] = &isr
		}
		if _, set := configs["max.message.bytes"]; !set && spec.MaxRecordBytes > 0 {
			maxBytes := strconv.Itoa(spec.MaxRecordBytes)
			configs["max.message.bytes"] = &maxBytes
		}
		created, err := CreateTopicIfMissing(ctx, adm, spec.Name, spec.Partitions, spec.ReplicationFactor, configs)
		if err != nil {
			return "", err
		}
		if created {
			return TopicCreated, nil
		}
		// Created a moment ago, by us or by someone else, and not yet in the
		// metadata we read: wait for it, then compare.
		if partitions, err = waitForTopic(ctx, adm, spec.Name); err != nil {
			return "", err
		}
	}
	switch {
	case spec.Partitions == partitions:
		return TopicUnchanged, nil
	case spec.Partitions < partitions:
		return "", fmt.Errorf("topic %s has %d partitions; Kafka cannot remove partitions (asked for %d)",
			spec.Name, partitions, spec.Partitions)
	case !allowKeyRemap:
		return "", fmt.Errorf("%w: topic %s has %d partitions, %d requested. Kafka assigns a key to "+
			"hash(key) mod partitions, so most aggregates would move to another partition: their new "+
			"events could be consumed before older ones still on the old partition, and per-aggregate "+
			"ordering breaks until consumers have drained the old partitions. Pause the relays, let "+
			"consumers catch up, then rerun with --allow-key-remap", ErrKeyRemap, spec.Name, partitions, spec.Partitions)
	}
	resp, err := adm.UpdatePartitions(ctx, int(spec.Partitions), spec.Name)
	if err == nil {
		var r kadm.CreatePartitionsResponse
		if r, err = resp.On(spec.Name, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return "", fmt.Errorf("add partitions to %s: %w", spec.Name, err)
	}
	return TopicGrown, nil
}

// CreateTopicIfMissing creates topic with partitions and replication factor
// (-1: the brokers' default) and configs, and says whether it did; a topic
// that already exists, whatever its shape, is fine.
func CreateTopicIfMissing(ctx context.Context, adm *kadm.Client, topic string, partitions int32, replicationFactor int16, configs map[string]*string) (created bool, err error) {
	resp, err := adm.CreateTopic(ctx, partitions, replicationFactor, configs, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	}
	return false, fmt.Errorf("create topic %s (%d partitions, replication factor %d): %w",
		topic, partitions, replicationFactor, err)
}

// topicPartitions returns a topic's partition count, and whether it exists.
func topicPartitions(ctx context.Context, adm *kadm.Client, name string) (int32, bool, error) {
	details, err := adm.ListTopics(ctx, name)
	if err != nil {
		return 0, false, fmt.Errorf("describe topic %s: %w", name, err)
	}
	d, ok := details[name]
	switch {
	case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		return 0, false, nil
	case d.Err != nil:
		return 0, false, fmt.Errorf("describe topic %s: %w", name, d.Err)
	}
	return int32(len(d.Partitions)), true, nil
}

// waitForTopic polls the metadata until a topic that exists shows up.
func waitForTopic(ctx context.Context, adm *kadm.Client, name string) (int32, error) {
	for i := 0; ; i++ {
		partitions, exists, err := topicPartitions(ctx, adm, name)
		if err != nil || exists {
			return partitions, err
		}
		if i == 50 {
			return 0, fmt.Errorf("topic %s exists but does not show up in the metadata", name)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TopicDescription is what `herald topics describe` shows.
type TopicDescription struct {
	Name              string            `json:"name"`
	Partitions        []PartitionState  `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	// Warnings are problems a check found (CheckTopicLimit), for the
	// operator.
	Warnings []string `json:"warnings,omitempty"`
}

// PartitionState is one partition's leader and replicas.
type PartitionState struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

// describedConfigs are the topic configs worth showing an operator.
var describedConfigs = map[string]bool{
	"min.insync.replicas": true, "max.message.bytes": true, "retention.ms": true,
	"cleanup.policy": true, "compression.type": true,
}

// DescribeTopics returns the named topics' partitions and main configs.
func DescribeTopics(ctx context.Context, adm *kadm.Client, names ...string) ([]TopicDescription, error) {
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topic configs: %w", err)
	}
	var out []TopicDescription
	for _, name := range names {
		d, ok := details[name]
		if !ok || d.Err != nil {
			if ok {
				err = d.Err
			}
			return nil, fmt.Errorf("topic %s: %w", name, cmpErr(err, kerr.UnknownTopicOrPartition))
		}
		td := TopicDescription{Name: name, Configs: map[string]string{}}
		for _, p := range d.Partitions.Sorted() {
			td.Partitions = append(td.Partitions, PartitionState{
				Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR,
			})
			td.ReplicationFactor = max(td.ReplicationFactor, len(p.Replicas))
		}
		if rc, err := configs.On(name, nil); err == nil {
			for _, c := range rc.Configs {
				if describedConfigs[c.Key] && c.Value != nil {
					td.Configs[c.Key] = *c.Value
				}
			}
		}
		out = append(out, td)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}
