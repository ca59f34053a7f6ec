package inbox_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

const poisonOrder = 666 // the handler always fails on this order

// TestPoisonRecordsAreDeadLettered sends, on one partition: two good
// events (one with unknown fields), an unsupported version, a malformed
// record, one without an id, an unknown type, an event the handler always
// fails on, a redelivery of the first event and a last good event. The good
// ones are applied once each, the duplicate is dropped, each bad one lands
// in the dead-letter topic with its class, the records behind them are
// processed, and the group's lag returns to 0. Run once per transaction
// mode.
func TestPoisonRecordsAreDeadLettered(t *testing.T) {
	for _, batch := range []int{1, 4} {
		t.Run("batch_size_"+strconv.Itoa(batch), func(t *testing.T) {
			testPoisonRecords(t, batch)
		})
	}
}

func testPoisonRecords(t *testing.T, batchSize int) {
	db := testenv.NewHeraldDatabase(t)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 1})
	consumerName := "poison-test"
	dlqTopic := kafka.DLQTopicName(topic, consumerName)
	deleteTopicAtCleanup(t, brokers, dlqTopic)

	idA, a := orderCreated(t, 1)
	idB, _ := orderCreated(t, 2)
	b := []byte(`{"event_id":"` + idB + `","type":"order.created","version":1,"occurred_at":"2026-09-26T10:12:30.123456+08:00",` +
		`"producer":"orders-v9","data":{"order_id":2,"customer_id":42,"items":[{"sku":"SKU-1","quantity":1,"unit_price":"1.00","color":"red"}],` +
		`"total_amount":"1.00","coupon":{"code":"X"}}}`)
	idC, c := orderCreated(t, 3)
	idPoison, poison := orderCreated(t, poisonOrder)
	v2 := strings.Replace(string(a), `"version":1`, `"version":2`, 1)
	v2 = strings.Replace(v2, idA, "0190f1c2-0000-7000-8000-000000000002", 1)
	records := []struct {
		value     string
		wantClass string // "" for a record that must be applied or dropped
	}{
		{string(a), ""},
		{string(b), ""},
		{v2, envelope.ClassUnsupportedVersion},
		{`{"event_id": "broken`, envelope.ClassMalformed},
		{`{"type":"order.created","version":1,"data":{"order_id":5,"total_amount":"1"}}`, envelope.ClassMissingID},
		{`{"event_id":"0190f1c2-0000-7000-8000-000000000003","type":"order.shipped","version":1,"data":{}}`, envelope.ClassUnknownType},
		{string(poison), inbox.ClassHandler},
		{string(a), ""}, // redelivered
		{string(c), ""},
	}
	var handlerCalls atomic.Int64
	handler := recordApplied(mysql.Dialect{}, "")
	cons, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: consumerName,
		Brokers:      brokers,
		Topics:       []string{topic},
		Group:        topic + "-group",
		DB:           db.DB,
		Registry:     contract.NewRegistry(),
		BatchSize:    batchSize,
		MaxAttempts:  3,
		RetryBackoff: time.Millisecond, RetryBackoffMax: 5 * time.Millisecond,
		Logger: testLogger(t),
		Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
			handlerCalls.Add(1)
			if m.Payload.(contract.OrderCreatedV1).OrderID == poisonOrder {
				return errors.New("no warehouse serves this order (password=hunter2)")
			}
			return handler(ctx, tx, m)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	producer := newProducer(t, brokers)
	var recs []*kgo.Record
	for _, r := range records {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(r.value),
			Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-abc-def-01")}}})
	}
	produce(t, producer, recs...)
	startConsumer(t, cons)

	adm := testenv.NewAdmin(t, brokers)
	testenv.Eventually(t, time.Minute, "lag 0", func() bool { return lagOf(t, adm, topic+"-group", topic) == 0 })

	// Applied once each, in partition order, and nothing else.
	rows, err := db.DB.Query("SELECT event_id FROM applied ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, id)
	}
	rows.Close()
	if want := []string{idA, idB, idC}; strings.Join(applied, ",") != strings.Join(want, ",") {
		t.Errorf("applied %v, want %v", applied, want)
	}
	if n := countRows(t, db.DB, "SELECT COUNT(*) FROM consumed_events WHERE consumer_name = ?", consumerName); n != 3 {
		t.Errorf("consumed_events has %d rows, want 3", n)
	}
	if n := countRows(t, db.DB, "SELECT COUNT(*) FROM consumed_events WHERE event_id = ?", idPoison); n != 0 {
		t.Errorf("the dead-lettered event is in consumed_events")
	}

	st := cons.Stats()
	if st.Processed != 3 || st.Duplicates != 1 {
		t.Errorf("stats: processed %d duplicates %d, want 3 and 1", st.Processed, st.Duplicates)
	}
	for _, class := range []string{envelope.ClassUnsupportedVersion, envelope.ClassMalformed, envelope.ClassMissingID, envelope.ClassUnknownType, inbox.ClassHandler} {
		if st.DeadLettered[class] != 1 {
			t.Errorf("stats: dead-lettered %s = %d, want 1 (%v)", class, st.DeadLettered[class], st.DeadLettered)
		}
	}
	if st.Retries[inbox.RetryHandler] != 2 {
		t.Errorf("stats: handler retries %d, want 2 (3 attempts)", st.Retries[inbox.RetryHandler])
	}

	// The dead-letter topic holds the five bad records, byte for byte, with
	// headers that say why and where from.
	dead := readAll(t, brokers, dlqTopic, 5)
	wantOffsets := []int64{2, 3, 4, 5, 6}
	for i, r := range dead {
		h := headers(r)
		want := records[wantOffsets[i]]
		if string(r.Value) != want.value {
			t.Errorf("dead letter %d value %q, want %q", i, r.Value, want.value)
		}
		if h[kafka.HeaderDLQErrorClass] != want.wantClass {
			t.Errorf("dead letter %d class %q, want %q", i, h[kafka.HeaderDLQErrorClass], want.wantClass)
		}
		if h[kafka.HeaderDLQTopic] != topic || h[kafka.HeaderDLQPartition] != "0" ||
			h[kafka.HeaderDLQOffset] != strconv.FormatInt(wantOffsets[i], 10) || h[kafka.HeaderDLQConsumer] != consumerName {
			t.Errorf("dead letter %d origin headers %v", i, h)
		}
		if h[kafka.HeaderDLQError] == "" || len(h[kafka.HeaderDLQError]) > kafka.DLQErrorMaxLen {
			t.Errorf("dead letter %d error header %q", i, h[kafka.HeaderDLQError])
		}
		if h["traceparent"] != "00-abc-def-01" {
			t.Errorf("dead letter %d lost the original headers: %v", i, h)
		}
	}
	if len(dead) == 5 {
		h := headers(dead[4])
		if strings.Contains(h[kafka.HeaderDLQError], "hunter2") || !strings.Contains(h[kafka.HeaderDLQError], "no warehouse serves this order") {
			t.Errorf("handler dead letter error %q: want the message, scrubbed", h[kafka.HeaderDLQError])
		}
		if h[kafka.HeaderDLQAttempts] != "3" {
			t.Errorf("handler dead letter attempts %q, want 3", h[kafka.HeaderDLQAttempts])
		}
	}
}

func headers(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// readAll reads n records of topic from its start.
func readAll(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		f.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestTransientErrorsAreRetriedWithoutLimit: a handler that hits a deadlock
// more often than MaxAttempts still gets its event applied, nothing is
// dead-lettered, and the retries are counted as transient.
func TestTransientErrorsAreRetriedWithoutLimit(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{})
	deleteTopicAtCleanup(t, brokers, kafka.DLQTopicName(topic, "transient"))
	var calls atomic.Int64
	apply := recordApplied(mysql.Dialect{}, "")
	cons, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: "transient", Brokers: brokers, Topics: []string{topic}, Group: topic, DB: db.DB,
		Registry: contract.NewRegistry(), MaxAttempts: 2,
		RetryBackoff: time.Millisecond, RetryBackoffMax: 2 * time.Millisecond, Logger: testLogger(t),
		Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
			if calls.Add(1) <= 4 {
				return &driver.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
			}
			return apply(ctx, tx, m)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, v := orderCreated(t, 1)
	produce(t, newProducer(t, brokers), &kgo.Record{Topic: topic, Value: v})
	startConsumer(t, cons)
	testenv.Eventually(t, time.Minute, "the event applied", func() bool { return countRows(t, db.DB, "SELECT COUNT(*) FROM applied") == 1 })
	st := cons.Stats()
	if st.Retries[inbox.RetryTransient] != 4 || len(st.DeadLettered) != 0 || st.Processed != 1 {
		t.Errorf("stats %+v: want 4 transient retries, no dead letter, 1 processed", st)
	}
}

// TestRunStoppedDuringStartReturnsNil: a shutdown that comes before the
// consumer started (while it creates its dead-letter topics) is a clean
// stop, not a failure: a service told to stop at start-up exits 0.
func TestRunStoppedDuringStartReturnsNil(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{})
	deleteTopicAtCleanup(t, brokers, kafka.DLQTopicName(topic, "early-stop"))
	cons, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: "early-stop", Brokers: brokers, Topics: []string{topic}, Group: topic, DB: db.DB,
		Registry: contract.NewRegistry(), Logger: testLogger(t),
		Handler: inbox.HandlerFunc(func(context.Context, *sql.Tx, inbox.Message) error { return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := cons.Run(ctx); err != nil {
		t.Errorf("Run with a context cancelled before the start: %v, want nil", err)
	}
}

// TestStartAtReplaysIntoANewGroup: a new group with StartAt reads only the
// records stamped at or after it, under a rate limit.
func TestStartAtReplaysIntoANewGroup(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{})
	deleteTopicAtCleanup(t, brokers, kafka.DLQTopicName(topic, "replay"))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	var newer []string
	for i := range 6 {
		id, v := orderCreated(t, int64(i+1))
		ts := base.Add(time.Duration(i) * time.Minute)
		recs = append(recs, &kgo.Record{Topic: topic, Value: v, Timestamp: ts})
		if i >= 3 {
			newer = append(newer, id)
		}
	}
	produce(t, newProducer(t, brokers), recs...)
	cons, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: "replay", Brokers: brokers, Topics: []string{topic}, Group: topic + "-replay", DB: db.DB,
		Registry: contract.NewRegistry(), Handler: recordApplied(mysql.Dialect{}, ""), Logger: testLogger(t),
		StartAt:   base.Add(3 * time.Minute),
		RateLimit: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, cons)
	adm := testenv.NewAdmin(t, brokers)
	testenv.Eventually(t, time.Minute, "lag 0", func() bool { return lagOf(t, adm, topic+"-replay", topic) == 0 })
	got := countRows(t, db.DB, "SELECT COUNT(*) FROM applied")
	gotNewer := countRows(t, db.DB, "SELECT COUNT(*) FROM applied WHERE event_id IN (?, ?, ?)", newer[0], newer[1], newer[2])
	if got != 3 || gotNewer != 3 {
		t.Errorf("applied %d events (%d of the newer three), want exactly the newer three", got, gotNewer)
	}
}
