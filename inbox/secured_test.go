package inbox_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConsumerOverSASLSSL: an inbox consumer on the stack's SASL_SSL
// listener (SCRAM-SHA-512, the password in a file) applies every event
// exactly once although each was delivered twice, dead-letters a poison
// event over the same listener, and a second group with the same consumer
// name, re-reading everything, applies nothing again.
func TestConsumerOverSASLSSL(t *testing.T) {
	k := testenv.StackKafka(t)
	sec := k.SCRAM(kafka.SASLScramSHA512)
	sec.SASLPasswordFile, sec.SASLPassword = testenv.WriteSecret(t, "kafka-password", sec.SASLPassword), ""
	opts, err := sec.Options()
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.NewHeraldDatabase(t)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	consumerName := "secured"
	deleteTopicAtCleanup(t, brokers, kafka.DLQTopicName(topic, consumerName))

	// Produced over the secured listener too, each event twice.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.SASLBrokers...), kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const events = 40
	var recs []*kgo.Record
	for i := range events {
		_, v := orderCreated(t, int64(i+1))
		key := []byte("order-" + strconv.Itoa(i%7))
		recs = append(recs, &kgo.Record{Topic: topic, Key: key, Value: v}, &kgo.Record{Topic: topic, Key: key, Value: v})
	}
	_, poison := orderCreated(t, poisonOrder)
	recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("poison"), Value: poison})
	produce(t, cl, recs...)

	adm := testenv.NewAdmin(t, brokers)
	consume := func(group string) {
		t.Helper()
		cons, err := inbox.New(inbox.Config{
			ConsumerName: consumerName, Dialect: db.Dialect, Brokers: k.SASLBrokers, KafkaOptions: opts,
			Topics: []string{topic}, Group: group, DB: db.DB, Registry: contract.NewRegistry(),
			MaxAttempts: 2, RetryBackoff: time.Millisecond, RetryBackoffMax: 5 * time.Millisecond,
			Logger: testLogger(t),
			Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
				if m.Payload.(contract.OrderCreatedV1).OrderID == poisonOrder {
					return errors.New("the warehouse refuses this order")
				}
				return recordApplied(db.Dialect, group)(ctx, tx, m)
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := startConsumer(t, cons)
		testenv.Eventually(t, time.Minute, "group "+group+" caught up", func() bool { return lagOf(t, adm, group, topic) == 0 })
		stop()
	}

	consume(topic + "-group")
	if n := countRows(t, db.DB, "SELECT COUNT(*) FROM applied"); n != events {
		t.Errorf("%d effects applied for %d events delivered twice each, want %d", n, events, events)
	}
	if n := countRows(t, db.DB, "SELECT COUNT(DISTINCT event_id) FROM applied"); n != events {
		t.Errorf("%d distinct events applied, want %d", n, events)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ends, err := kafka.EndOffsets(ctx, adm, kafka.DLQTopicName(topic, consumerName))
	if err != nil || len(ends) != 1 || ends[0].End != 1 {
		t.Errorf("dead-letter topic: %v, %v; want one record, the poison event", ends, err)
	}

	consume(topic + "-again")
	if n := countRows(t, db.DB, "SELECT COUNT(*) FROM applied"); n != events {
		t.Errorf("after a second group re-read everything: %d effects, want still %d", n, events)
	}
}
