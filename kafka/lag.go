package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// PartitionOffset is a partition's end offset: how many records it holds
// (published records per partition, the hotspot view).
type PartitionOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	End       int64  `json:"end_offset"`
}

// EndOffsets returns the end offset of every partition of topics.
func EndOffsets(ctx context.Context, adm *kadm.Client, topics ...string) ([]PartitionOffset, error) {
	listed, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	var out []PartitionOffset
	var firstErr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			}
			return
		}
		out = append(out, PartitionOffset{Topic: o.Topic, Partition: o.Partition, End: o.Offset})
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, firstErr
}

// GroupLags returns the lag of groups on every partition of topics; with no
// groups named, of every group the cluster knows that has committed an
// offset on one of topics.
func GroupLags(ctx context.Context, adm *kadm.Client, groups []string, topics ...string) ([]PartitionLag, error) {
	named := len(groups) > 0
	if !named {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		groups = listed.Groups()
		sort.Strings(groups)
	}
	var out []PartitionLag
	for _, g := range groups {
		_, lags, err := GroupLag(ctx, adm, g, topics...)
		if err != nil {
			return nil, err
		}
		reads := named
		for _, l := range lags {
			reads = reads || l.Committed >= 0
		}
		if reads {
			out = append(out, lags...)
		}
	}
	return out, nil
}
