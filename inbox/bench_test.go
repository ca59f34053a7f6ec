package inbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// benchEvents is how many order.created events each run consumes.
const benchEvents = 20_000

// BenchmarkConsumer measures consumer throughput over 20,000 events on a
// 12-partition topic, against the real servers:
//
//	kafka_only      the same group consumer, decoding each record, no database work
//	tx_no_inbox     one transaction per record with the handler's INSERT, no inbox row
//	inbox_batch_1   the inbox: inbox row + handler INSERT, one record per transaction
//	inbox_batch_10  the same, 10 records of a partition per transaction
//	inbox_batch_100 the same, 100 records per transaction
//
// Run: go test ./inbox -run '^$' -bench BenchmarkConsumer -benchtime 1x
// It reports events/s from the first finished event to the last (joining
// the group, creating the topic and producing are not counted).
func BenchmarkConsumer(b *testing.B) {
	brokers := testenv.KafkaBrokers(b)
	values := make([][]byte, benchEvents)
	for i := range values {
		_, values[i] = orderCreated(b, int64(i+1))
	}
	registry := contract.NewRegistry()

	cases := []struct {
		name  string
		batch int // 0: no inbox
		run   func(b *testing.B, db *sql.DB, topic string, done *atomic.Int64) func(context.Context) error
	}{
		{"kafka_only", 0, func(b *testing.B, _ *sql.DB, topic string, done *atomic.Int64) func(context.Context) error {
			return plainConsumer(b, brokers, topic, func(ctx context.Context, recs []*kgo.Record) int {
				for _, r := range recs {
					if _, err := registry.Decode(r.Value); err != nil {
						b.Error(err)
					}
				}
				done.Add(int64(len(recs)))
				return len(recs)
			})
		}},
		{"tx_no_inbox", 0, func(b *testing.B, db *sql.DB, topic string, done *atomic.Int64) func(context.Context) error {
			handler := recordApplied(mysql.Dialect{}, "bench")
			return plainConsumer(b, brokers, topic, func(ctx context.Context, recs []*kgo.Record) int {
				ev, err := registry.Decode(recs[0].Value)
				if err != nil {
					b.Error(err)
				}
				tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
				if err != nil {
					return 0
				}
				defer tx.Rollback()
				if err := handler(ctx, tx, inbox.Message{Event: ev, Partition: recs[0].Partition, Offset: recs[0].Offset}); err != nil {
					return 0
				}
				if err := tx.Commit(); err != nil {
					return 0
				}
				done.Add(1)
				return 1
			})
		}},
	}
	for _, batch := range []int{1, 10, 100} {
		cases = append(cases, struct {
			name  string
			batch int
			run   func(b *testing.B, db *sql.DB, topic string, done *atomic.Int64) func(context.Context) error
		}{"inbox_batch_" + strconv.Itoa(batch), batch, func(b *testing.B, db *sql.DB, topic string, done *atomic.Int64) func(context.Context) error {
			name := fmt.Sprintf("bench-%d", batch)
			deleteTopicAtCleanup(b, brokers, kafka.DLQTopicName(topic, name))
			apply := recordApplied(mysql.Dialect{}, "bench")
			c, err := inbox.New(inbox.Config{
				Dialect:      mysql.Dialect{},
				ConsumerName: name, Brokers: brokers, Topics: []string{topic}, Group: topic, DB: db,
				Registry: registry, BatchSize: batch, Logger: testLogger(b),
				Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
					if err := apply(ctx, tx, m); err != nil {
						return err
					}
					done.Add(1)
					return nil
				}),
			})
			if err != nil {
				b.Fatal(err)
			}
			return c.Run
		}})
	}

	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db := testenv.NewHeraldDatabase(b)
				createAppliedTable(b, db)
				db.DB.SetMaxOpenConns(32)
				db.DB.SetMaxIdleConns(32)
				topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
				producer := newProducer(b, brokers)
				var recs []*kgo.Record
				for i, v := range values {
					recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: v})
				}
				produce(b, producer, recs...)
				var done atomic.Int64
				run := tc.run(b, db.DB, topic, &done)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { errc <- run(ctx) }()
				// The clock starts with the first finished event, so joining
				// the group is not counted.
				testenv.Eventually(b, 5*time.Minute, "the first event", func() bool { return done.Load() > 0 })
				b.StartTimer()
				start, from := time.Now(), done.Load()
				testenv.Eventually(b, 5*time.Minute, "every event", func() bool { return done.Load() >= benchEvents })
				elapsed := time.Since(start)
				b.StopTimer()
				cancel()
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				if n := done.Load(); n < benchEvents {
					b.Fatalf("finished %d of %d events in 5 minutes", n, benchEvents)
				}
				b.ReportMetric(float64(benchEvents-from)/elapsed.Seconds(), "events/s")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// plainConsumer is the inbox's group consumer without the inbox.
func plainConsumer(b *testing.B, brokers []string, topic string, process kafka.ProcessFunc) func(context.Context) error {
	c, err := kafka.NewConsumer(kafka.ConsumerConfig{
		Brokers: brokers, Group: topic, Topics: []string{topic}, Process: process, Logger: testLogger(b),
	})
	if err != nil {
		b.Fatal(err)
	}
	return c.Run
}
