package kafka_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// recordOfSize returns a record to topic whose one-record batch is exactly
// n bytes by kafka.RecordBatchBytes.
func recordOfSize(t *testing.T, topic string, n int) *kgo.Record {
	t.Helper()
	r := &kgo.Record{Topic: topic, Key: []byte("aggregate-1"),
		Headers: []kgo.RecordHeader{{Key: "herald-event-id", Value: []byte("0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f")}}}
	for size := 0; size != n; size = kafka.RecordBatchBytes(r) {
		grow := max(1, n-kafka.RecordBatchBytes(r))
		if size > n {
			grow = -1
		}
		r.Value = make([]byte, len(r.Value)+grow)
	}
	return r
}

// TestRecordLimitsOnTheBroker: a record just under a limit is published
// and one byte over it is refused as MESSAGE_TOO_LARGE (class too_large),
// both for the topic's max.message.bytes (exactly at the limit: the broker
// counts as RecordBatchBytes does) and for the producer's MaxRecordBytes
// (3 bytes under: franz-go's count adds up to 4 bytes of prefix, and the
// producer errs on the side of never sending what the topic refuses).
func TestRecordLimitsOnTheBroker(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topicMax := 100_000
	small := strconv.Itoa(topicMax)
	large := strconv.Itoa(4 * topicMax)
	smallTopic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &small}})
	largeTopic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &large}})

	tests := []struct {
		name           string
		maxRecordBytes int
		topic          string
		limit, under   int
	}{
		{"topic's max.message.bytes", 0, smallTopic, topicMax, topicMax},
		{"producer's MaxRecordBytes", 2 * topicMax, largeTopic, 2 * topicMax, 2*topicMax - 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, Compression: "none",
				MaxRecordBytes: tt.maxRecordBytes, DeliveryTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.ProduceSync(ctx, recordOfSize(t, tt.topic, tt.under)).FirstErr(); err != nil {
				t.Errorf("a record of %d bytes (limit %d): %v, want it published", tt.under, tt.limit, err)
			}
			err = p.ProduceSync(ctx, recordOfSize(t, tt.topic, tt.limit+1)).FirstErr()
			if class, _ := kafka.Classify(err); !errors.Is(err, kerr.MessageTooLarge) || class != kafka.ClassTooLarge {
				t.Errorf("a record of %d bytes: %v (class %s), want MESSAGE_TOO_LARGE", tt.limit+1, err, class)
			}
		})
	}
}

func TestProducerRefusesAnInvalidRecordLimit(t *testing.T) {
	for _, n := range []int{-1, kafka.MaxRecordBytesMin - 1, kafka.MaxRecordBytesMax + 1} {
		if _, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: []string{"127.0.0.1:9092"}, MaxRecordBytes: n}); err == nil {
			t.Errorf("MaxRecordBytes %d accepted", n)
		}
	}
}
