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

// PartitionLag is how far a consumer group is behind on one partition.
type PartitionLag struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed_offset"`
	End       int64  `json:"end_offset"`
	// Lag is End - Committed (everything, when nothing is committed).
	Lag int64 `json:"lag"`
}

// GroupLags returns the lag of groups on every partition they consume;
// with no groups named, of every group the cluster knows that consumes one
// of topics (all groups when topics is empty).
func GroupLags(ctx context.Context, adm *kadm.Client, groups []string, topics ...string) ([]PartitionLag, error) {
	if len(groups) == 0 {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		groups = listed.Groups()
	}
	if len(groups) == 0 {
		return nil, nil
	}
	lags, err := adm.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("group lag: %w", err)
	}
	wanted := map[string]bool{}
	for _, t := range topics {
		wanted[t] = true
	}
	var out []PartitionLag
	for _, g := range lags.Sorted() {
		if err := g.Error(); err != nil {
			return nil, fmt.Errorf("lag of group %s: %w", g.Group, err)
		}
		for _, l := range g.Lag.Sorted() {
			if len(wanted) > 0 && !wanted[l.Topic] {
				continue
			}
			out = append(out, PartitionLag{Group: g.Group, Topic: l.Topic, Partition: l.Partition,
				Committed: l.Commit.At, End: l.End.Offset, Lag: l.Lag})
		}
	}
	return out, nil
}
