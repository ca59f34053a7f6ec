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
			if firstErr == nil && o.Partition < 0 {
				// The topic's own error (it does not exist, an ACL): no
				// partition to name.
				firstErr = fmt.Errorf("end offsets of topic %s: %w", o.Topic, o.Err)
			} else if firstErr == nil {
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

// GroupLags returns the lag of groups on every partition of topics, sorted
// by group, topic and partition; with no groups named, of every group the
// cluster knows that has committed an offset on one of topics.
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
	sort.SliceStable(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// PartitionLag is how far a group's committed offset is behind the end of
// one partition.
type PartitionLag struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset (-1: none).
	Committed int64 `json:"committed_offset"`
	// End is the partition's end offset (the next offset to be written).
	End int64 `json:"end_offset"`
	// Lag is End minus Committed (minus the log start when nothing is
	// committed).
	Lag int64 `json:"lag"`
}

// GroupLag returns the lag of group on every partition of topics, sorted by
// topic and partition, and its total: end offsets (read_committed) minus
// committed offsets. A partition without a commit counts from its log
// start.
func GroupLag(ctx context.Context, adm *kadm.Client, group string, topics ...string) (int64, []PartitionLag, error) {
	committed, err := adm.FetchOffsetsForTopics(ctx, group, topics...)
	if err != nil {
		return 0, nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	if err := committed.Error(); err != nil {
		return 0, nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return 0, nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return 0, nil, fmt.Errorf("list start offsets of %v: %w", topics, err)
	}
	var total int64
	var out []PartitionLag
	var firstErr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if firstErr == nil && o.Partition < 0 {
				// The topic's own error (it does not exist, an ACL): no
				// partition to name.
				firstErr = fmt.Errorf("end offsets of topic %s: %w", o.Topic, o.Err)
			} else if firstErr == nil {
				firstErr = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			}
			return
		}
		pl := PartitionLag{Group: group, Topic: o.Topic, Partition: o.Partition, Committed: -1, End: o.Offset}
		from := int64(0)
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Err == nil {
			from = s.Offset
		}
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.Err == nil && c.At >= 0 {
			pl.Committed = c.At
			from = c.At
		}
		pl.Lag = max(0, pl.End-from)
		total += pl.Lag
		out = append(out, pl)
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return total, out, firstErr
}
