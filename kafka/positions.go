package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PositionsTopicDefault is the positions topic's name unless configured:
// where a change stream's leader commits its stream position beside its
// records, in exactly-once delivery.
const PositionsTopicDefault = "herald.positions"

// StreamPosition is what a change stream's transaction commits beside its
// records: the stream position after them, the stream lease's epoch of
// the leader that committed it, and when.
type StreamPosition struct {
	Position string    `json:"position"`
	Epoch    uint64    `json:"epoch"`
	At       time.Time `json:"at"`
}

// PositionRecord is p's record on the positions topic, keyed by the
// stream's transactional id.
func PositionRecord(topic, streamID string, p StreamPosition) *kgo.Record {
	value, _ := json.Marshal(p) // a struct of strings, a number and a time
	return &kgo.Record{Topic: topic, Key: []byte(streamID), Value: value}
}

// ReadPosition returns the last position committed for streamID on the
// positions topic, reading it read_committed to its end; found is false
// when there is none. Call it after NewTransactionalProducer for the same
// id: every transaction of the id's older producers has ended then, so
// the end holds the last one's position if it committed. Other streams'
// transactions on the same partitions may still be open, holding their
// last stable offset below the end: ReadPosition waits for them (they end
// within their transaction timeout, or ctx ends the wait). cl is any
// client of the cluster.
func ReadPosition(ctx context.Context, cl *kgo.Client, topic, streamID string) (p StreamPosition, found bool, err error) {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return p, false, fmt.Errorf("read the positions topic %s's end: %w", topic, err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic && o.Offset > 0 {
			end[o.Partition] = o.Offset
		}
	})
	if len(end) == 0 {
		return p, false, nil
	}
	if err := awaitStable(ctx, adm, topic, end); err != nil {
		return p, false, err
	}
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		return p, false, fmt.Errorf("read the positions topic %s's leaders: %w", topic, err)
	}
	td, ok := meta.Topics[topic]
	if !ok || td.Err != nil {
		return p, false, fmt.Errorf("read the positions topic %s's leaders: %w", topic, cmpErr(td.Err, kerr.UnknownTopicOrPartition))
	}
	for part, stop := range end {
		pd, ok := td.Partitions[part]
		if !ok || pd.Err != nil {
			return p, false, fmt.Errorf("positions topic %s partition %d: %w", topic, part, cmpErr(pd.Err, kerr.UnknownTopicOrPartition))
		}
		for offset := int64(0); offset < stop; {
			records, next, err := fetchCommitted(ctx, cl.Broker(int(pd.Leader)), topic, td.ID, part, offset)
			if err != nil {
				return p, false, fmt.Errorf("read the positions topic %s partition %d at %d: %w", topic, part, offset, err)
			}
			for _, r := range records {
				if r.Offset >= stop || string(r.Key) != streamID {
					continue
				}
				var v StreamPosition
				if err := json.Unmarshal(r.Value, &v); err == nil && v.Position != "" {
					p, found = v, true
				}
			}
			offset = next
		}
	}
	return p, found, nil
}

// fetchCommitted reads one fetch's worth of a partition's committed
// records from offset, and the offset after what the fetch covered
// (past control records, aborted transactions and compacted gaps, which
// return no record).
func fetchCommitted(ctx context.Context, b *kgo.Broker, topic string, topicID [16]byte, partition int32, offset int64) ([]*kgo.Record, int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 4 << 20
	req.IsolationLevel = 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 4<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.RetriableRequest(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return nil, 0, err
	}
	for _, t := range fr.Topics {
		for i := range t.Partitions {
			if t.Partitions[i].Partition != partition {
				continue
			}
			fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Offset: offset, IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: partition,
			}, &t.Partitions[i], kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return nil, 0, fp.Err
			}
			if next <= offset && fp.LogStartOffset > offset {
				next = fp.LogStartOffset // below the log's start: deleted
			}
			if next <= offset {
				return nil, 0, fmt.Errorf("no progress past offset %d (high watermark %d)", offset, fp.HighWatermark)
			}
			return fp.Records, next, nil
		}
	}
	return nil, 0, errors.New("the fetch response lacks the partition")
}

// awaitStable waits until every partition's last stable offset reaches
// end: no transaction begun before end is still open.
func awaitStable(ctx context.Context, adm *kadm.Client, topic string, end map[int32]int64) error {
	for {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		if err != nil {
			return fmt.Errorf("read the positions topic %s's last stable offsets: %w", topic, err)
		}
		pending := false
		stable.Each(func(o kadm.ListedOffset) {
			if e, ok := end[o.Partition]; ok && o.Topic == topic && o.Offset < e {
				pending = true
			}
		})
		if !pending {
			return nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the positions topic %s has transactions open longer than the wait: %w", topic, ctx.Err())
		case <-t.C:
		}
	}
}

// PositionsTopicSpec is the positions topic as herald creates it:
// compacted, one partition (a record per transaction of every stream,
// read whole by a new leader), replicated as the data topics are.
func PositionsTopicSpec(name string, replicationFactor int16, minInsync int) TopicSpec {
	return TopicSpec{Name: name, Partitions: 1, ReplicationFactor: replicationFactor, MinInsyncReplicas: minInsync,
		Configs: map[string]string{"cleanup.policy": "compact"}}
}

// ErrPositionsTopic: the positions topic is missing or not fit to hold
// the streams' positions.
var ErrPositionsTopic = errors.New("positions topic")

// CheckPositionsTopic refuses a positions topic that is missing, not
// compacted (its positions would be deleted with retention, and a new
// leader would publish again from an older one), or replicated by fewer
// brokers than minReplicas (a broker's loss could lose a committed
// position).
func CheckPositionsTopic(ctx context.Context, adm *kadm.Client, topic string, minReplicas int) error {
	ds, err := DescribeTopics(ctx, adm, topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("%w %s does not exist: create it with `herald topics create --positions` or `herald stream setup`", ErrPositionsTopic, topic)
	}
	if err != nil {
		return err
	}
	d := ds[0]
	var problems []string
	if policy := d.Configs["cleanup.policy"]; !strings.Contains(policy, "compact") {
		problems = append(problems, fmt.Sprintf("cleanup.policy is %q, want compact (kafka-configs --alter --add-config cleanup.policy=compact)", policy))
	}
	if d.ReplicationFactor < minReplicas {
		problems = append(problems, "replication factor "+strconv.Itoa(d.ReplicationFactor)+", want at least "+strconv.Itoa(minReplicas))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w %s: %s", ErrPositionsTopic, topic, strings.Join(problems, "; "))
	}
	return nil
}
