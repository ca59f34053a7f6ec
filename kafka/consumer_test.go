package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConsumerPartitionOrderAndBackPressure: with a tiny buffer per
// partition, fetching pauses and resumes many times; every record is still
// processed once, each partition strictly in offset order, and the group's
// committed offsets reach the end.
func TestConsumerPartitionOrderAndBackPressure(t *testing.T) {
	const partitions, perPartition = 3, 300
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: partitions})
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	next := map[int32]int64{} // next expected offset per partition
	seen := 0
	allSeen := make(chan struct{})
	c, err := kafka.NewConsumer(kafka.ConsumerConfig{
		Brokers: brokers, Group: topic, Topics: []string{topic},
		MaxPollRecords: 10, MaxBufferedRecords: 20,
		Process: func(ctx context.Context, recs []*kgo.Record) int {
			r := recs[0] // one at a time, so the buffers fill up
			mu.Lock()
			defer mu.Unlock()
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			if seen++; seen == partitions*perPartition {
				close(allSeen)
			}
			return 1
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	select {
	case <-allSeen:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("processed %d of %d records", seen, partitions*perPartition)
	}
	adm := testenv.NewAdmin(t, brokers)
	deadline := time.Now().Add(30 * time.Second)
	for {
		lag, _, err := kafka.GroupLag(ctx, adm, topic, topic)
		if err == nil && lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag %d (%v) 30 s after the last record", lag, err)
		}
		<-time.After(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen != partitions*perPartition {
		t.Errorf("processed %d records, want %d (some twice)", seen, partitions*perPartition)
	}
}
