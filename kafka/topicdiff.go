package kafka

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicDifference is one way an existing topic differs from what was asked
// for. Have is what the topic has, Want what was asked ("at least N" for
// max.message.bytes derived from TopicSpec.MaxRecordBytes).
type TopicDifference struct {
	Setting string `json:"setting"`
	Have    string `json:"have"`
	Want    string `json:"want"`
}

func (d TopicDifference) String() string {
	return fmt.Sprintf("%s is %s, asked for %s", d.Setting, d.Have, d.Want)
}

// CompareTopic returns how an existing topic differs from spec in what
// EnsureTopic does not change: its replication factor, min.insync.replicas,
// each config of spec.Configs, and a max.message.bytes below
// spec.MaxRecordBytes. Partitions are EnsureTopic's business. Fields of
// spec left zero are not compared.
func CompareTopic(ctx context.Context, adm *kadm.Client, spec TopicSpec) ([]TopicDifference, error) {
	details, err := adm.ListTopics(ctx, spec.Name)
	if err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", spec.Name, err)
	}
	d, ok := details[spec.Name]
	if !ok || d.Err != nil {
		return nil, fmt.Errorf("describe topic %s: %w", spec.Name, cmpErr(d.Err, kerr.UnknownTopicOrPartition))
	}
	var configs kadm.ResourceConfig
	rcs, err := adm.DescribeTopicConfigs(ctx, spec.Name)
	if err == nil {
		if configs, err = rcs.On(spec.Name, nil); err == nil {
			err = configs.Err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("describe configs of topic %s: %w", spec.Name, err)
	}
	have := map[string]string{}
	for _, c := range configs.Configs {
		if c.Value != nil {
			have[c.Key] = *c.Value
		}
	}

	var diffs []TopicDifference
	replicas := 0
	for _, p := range d.Partitions {
		replicas = max(replicas, len(p.Replicas))
	}
	if spec.ReplicationFactor > 0 && replicas != int(spec.ReplicationFactor) {
		diffs = append(diffs, TopicDifference{Setting: "replication factor",
			Have: strconv.Itoa(replicas), Want: strconv.Itoa(int(spec.ReplicationFactor))})
	}
	want := map[string]string{}
	for k, v := range spec.Configs {
		want[k] = v
	}
	if spec.MinInsyncReplicas > 0 {
		want["min.insync.replicas"] = strconv.Itoa(spec.MinInsyncReplicas)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if h, ok := have[k]; !ok || h != want[k] {
			if !ok {
				h = "(not set)"
			}
			diffs = append(diffs, TopicDifference{Setting: k, Have: h, Want: want[k]})
		}
	}
	if _, asked := want["max.message.bytes"]; !asked && spec.MaxRecordBytes > 0 {
		h, ok := have["max.message.bytes"]
		if n, err := strconv.Atoi(h); err != nil || n < spec.MaxRecordBytes {
			if !ok {
				h = "(not set)"
			}
			diffs = append(diffs, TopicDifference{Setting: "max.message.bytes", Have: h,
				Want: fmt.Sprintf("at least %d (the relays' --max-record-bytes)", spec.MaxRecordBytes)})
		}
	}
	return diffs, nil
}
