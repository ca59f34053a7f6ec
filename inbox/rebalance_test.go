package inbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestRebalanceAppliesEveryEventOnce runs 10,000 events over 12 partitions
// through one consumer; a second instance joins part-way (the group
// rebalances) and later leaves (it rebalances again). The handler is not
// idempotent by itself (a plain INSERT), so every event having exactly one
// row proves that no event was applied twice and none was skipped — the
// latter also shows that no rebalance committed an offset past a record
// whose transaction had not committed. One instance uses one record per
// transaction, the other batches.
func TestRebalanceAppliesEveryEventOnce(t *testing.T) {
	testenv.OnEachServer(t, testRebalanceAppliesEveryEventOnce)
}

func testRebalanceAppliesEveryEventOnce(t *testing.T, server testenv.Server) {
	const events = 10_000
	db := testenv.NewHeraldDatabaseOn(t, server)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 12})
	group := topic + "-group"
	deleteTopicAtCleanup(t, brokers, kafka.DLQTopicName(topic, "rebalance"))

	newInstance := func(name string, batch int) *inbox.Consumer {
		c, err := inbox.New(inbox.Config{
			Dialect:      db.Dialect,
			ConsumerName: "rebalance", Brokers: brokers, Topics: []string{topic}, Group: group,
			DB: db.DB, Registry: contract.NewRegistry(), Handler: recordApplied(db.Dialect, name),
			BatchSize: batch, SessionTimeout: 6 * time.Second, Logger: testLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := newInstance("a", 1)
	startConsumer(t, a)

	producer := newProducer(t, brokers)
	values := make([][]byte, events)
	for i := range values {
		_, values[i] = orderCreated(t, int64(i+1))
	}
	// produce sends events [from, to) in the background.
	produce := func(from, to int) <-chan error {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var batch []*kgo.Record
			for i := from; i < to; i++ {
				batch = append(batch, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i + 1)), Value: values[i]})
			}
			done <- producer.ProduceSync(ctx, batch...).FirstErr()
		}()
		return done
	}
	firstHalf := produce(0, events/2)

	applied := func() int64 { return int64(db.Count(t, "SELECT COUNT(*) FROM applied")) }
	testenv.Eventually(t, 2*time.Minute, "2,000 events applied by the first instance", func() bool { return applied() >= 2000 })

	// The second instance joins while the first half is still being
	// consumed; the second half is produced once it owns partitions, so it
	// surely has work.
	b := newInstance("b", 20)
	stopB := startConsumer(t, b)
	testenv.Eventually(t, time.Minute, "the second instance to be assigned partitions", func() bool { return len(b.Stats().Assigned) > 0 })
	secondHalf := produce(events/2, events)
	testenv.Eventually(t, time.Minute, "the second instance to apply events", func() bool {
		return db.Count(t, "SELECT COUNT(*) FROM applied WHERE consumer = 'b'") >= 200
	})
	stopB() // leaves the group: the first instance takes its partitions back
	atLeave := applied()
	for _, done := range []<-chan error{firstHalf, secondHalf} {
		if err := <-done; err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	adm := testenv.NewAdmin(t, brokers)
	testenv.Eventually(t, 2*time.Minute, "every event applied and lag 0", func() bool {
		return applied() >= events && lagOf(t, adm, group, topic) == 0
	})

	var total, distinct, byB int64
	if err := db.DB.QueryRow("SELECT COUNT(*), COUNT(DISTINCT event_id), SUM(CASE WHEN consumer = 'b' THEN 1 ELSE 0 END) FROM applied").Scan(&total, &distinct, &byB); err != nil {
		t.Fatal(err)
	}
	if total != events || distinct != events {
		t.Errorf("applied rows %d, distinct events %d; want %d of each", total, distinct, events)
	}
	if n := db.Count(t, "SELECT COUNT(*) FROM consumed_events"); n != events {
		t.Errorf("consumed_events has %d rows, want %d", n, events)
	}
	if atLeave >= events {
		t.Errorf("the second instance left after everything was applied; the test did not exercise a rebalance under load")
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("instance a: processed %d, duplicates %d; instance b: processed %d, duplicates %d; applied when b left: %d",
		sa.Processed, sa.Duplicates, sb.Processed, sb.Duplicates, atLeave)
	if sa.Processed+sb.Processed != events {
		t.Errorf("processed %d + %d, want %d", sa.Processed, sb.Processed, events)
	}
}
