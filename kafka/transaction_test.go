package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// newTransactional starts a transactional producer with id on the stack.
func newTransactional(t *testing.T, brokers []string, id string) *kgo.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kafka.NewTransactionalProducer(ctx, kafka.TransactionalConfig{
		Producer: kafka.ProducerConfig{Brokers: brokers}, TransactionalID: id, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// transact commits a transaction holding one record for topic and
// the position on positions; with commit false it leaves it open.
func transact(t *testing.T, cl *kgo.Client, topic, positions, id string, pos kafka.StreamPosition, commit bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte("a"), Value: []byte(pos.Position)}, nil)
	cl.Produce(ctx, kafka.PositionRecord(positions, id, pos), nil)
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if !commit {
		return nil
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// readAll reads topic's values from the start to its end at isolation.
func readAll(t *testing.T, brokers []string, topic string, isolation kgo.IsolationLevel) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kafka.EndOffsets(ctx, testenv.NewAdmin(t, brokers), topic)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var values []string
	// The commit and abort markers come too (and are left out of values),
	// so the last offset is seen.
	for next, want := int64(0), ends[0].End; next < want; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s to %d: stopped at %d: %v", topic, want, next, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				values = append(values, string(r.Value))
			}
			next = r.Offset + 1
		})
	}
	return values
}

// TestTransactionsFenceAndPositions: on the stack's real broker, a
// stream's transactions commit its records and its position together; a
// new producer with the same transactional id fences the old one, whose
// open transaction is aborted (seen by a read_uncommitted reader only),
// and ReadPosition then returns the last committed position.
func TestTransactionsFenceAndPositions(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	adm := testenv.NewAdmin(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := kafka.CheckTransactions(ctx, adm); err != nil {
		t.Fatalf("the stack's cluster should host transactions: %v", err)
	}
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{})
	compact := "compact"
	positions := testenv.NewTopic(t, brokers, testenv.TopicOptions{Configs: map[string]*string{"cleanup.policy": &compact}})
	if err := kafka.CheckPositionsTopic(ctx, adm, positions, 1); err != nil {
		t.Fatalf("a compacted positions topic is refused: %v", err)
	}
	id := "herald-test-" + strings.TrimPrefix(topic, "herald-t-")

	if _, found, err := kafka.ReadPosition(ctx, newTransactional(t, brokers, id+"-reader"), positions, id); err != nil || found {
		t.Fatalf("an empty positions topic: found %v, err %v", found, err)
	}
	old := newTransactional(t, brokers, id)
	if err := transact(t, old, topic, positions, id, kafka.StreamPosition{Position: "p1", Epoch: 1}, true); err != nil {
		t.Fatal(err)
	}
	if err := transact(t, old, topic, positions, id, kafka.StreamPosition{Position: "p2", Epoch: 1}, false); err != nil {
		t.Fatal(err)
	}
	// Another stream's transaction, open on the same partition: the read
	// waits for it.
	other := newTransactional(t, brokers, id+"-other")
	if err := transact(t, other, topic, positions, id+"-other", kafka.StreamPosition{Position: "q1"}, false); err != nil {
		t.Fatal(err)
	}
	otherEnded := make(chan error, 1)
	go func() {
		<-time.After(time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		otherEnded <- other.EndTransaction(ctx, kgo.TryCommit)
	}()

	successor := newTransactional(t, brokers, id) // fences old, aborting p2
	got, found, err := kafka.ReadPosition(ctx, successor, positions, id)
	if err != nil || !found || got.Position != "p1" {
		t.Fatalf("ReadPosition after the fence = %+v, %v, %v; want p1", got, found, err)
	}
	select {
	case err := <-otherEnded:
		if err != nil {
			t.Fatalf("the other stream's commit: %v", err)
		}
	default:
		t.Fatal("ReadPosition returned while another transaction on the partition was still open")
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed its transaction")
	}
	if err := transact(t, successor, topic, positions, id, kafka.StreamPosition{Position: "p3", Epoch: 2}, true); err != nil {
		t.Fatal(err)
	}
	if got, _, err := kafka.ReadPosition(ctx, newTransactional(t, brokers, id+"-reader"), positions, id); err != nil || got.Position != "p3" || got.Epoch != 2 {
		t.Fatalf("ReadPosition = %+v, %v; want p3 of epoch 2", got, err)
	}

	if committed := strings.Join(readAll(t, brokers, topic, kgo.ReadCommitted()), ","); committed != "p1,q1,p3" {
		t.Errorf("read_committed reads %q, want p1,q1,p3", committed)
	}
	if uncommitted := strings.Join(readAll(t, brokers, topic, kgo.ReadUncommitted()), ","); uncommitted != "p1,p2,q1,p3" {
		t.Errorf("read_uncommitted reads %q, want the aborted p2 too: p1,p2,q1,p3", uncommitted)
	}
}

// TestCheckPositionsTopicRefuses: a positions topic that is missing, not
// compacted or replicated too little is refused, naming what to change.
func TestCheckPositionsTopicRefuses(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	adm := testenv.NewAdmin(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain := testenv.NewTopic(t, brokers, testenv.TopicOptions{})
	compact := "compact"
	compacted := testenv.NewTopic(t, brokers, testenv.TopicOptions{Configs: map[string]*string{"cleanup.policy": &compact}})
	tests := []struct {
		name, topic string
		replicas    int
		want        []string
	}{
		{"missing", plain + "-nosuch", 1, []string{"does not exist", "herald topics create --positions"}},
		{"not compacted", plain, 1, []string{"cleanup.policy", "compact"}},
		{"replicated too little", compacted, 2, []string{"replication factor 1", "at least 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := kafka.CheckPositionsTopic(ctx, adm, tt.topic, tt.replicas)
			if !errors.Is(err, kafka.ErrPositionsTopic) {
				t.Fatalf("CheckPositionsTopic = %v, want ErrPositionsTopic", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
		})
	}
}
