package inbox_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// formatCase is one end-to-end run of a non-herald format.
type formatCase struct {
	format     inbox.Format
	typeHeader string
	batchSize  int
	// record returns the i-th event's record, with event id id, for order
	// orderID.
	record func(i int, id string, orderID int64) *kgo.Record
	// withoutID are records of the format that name no event id.
	withoutID []*kgo.Record
	// wantType and wantTime say what the handler must see besides the
	// data.
	wantType string
	wantTime bool
}

const eventsPerFormatTest = 6

// TestDebeziumRecordsAreAppliedOnce: records as Debezium's Outbox Event
// Router writes them (event id in the "id" header, type in "eventType",
// the payload as JSON text or, as Kafka Connect's JsonConverter writes a
// string payload, a JSON string literal) are applied exactly once each
// although every one is delivered twice, and a record without an id header
// is dead-lettered as missing_id. On MariaDB one record per transaction,
// on PostgreSQL batches of 4.
func TestDebeziumRecordsAreAppliedOnce(t *testing.T) {
	c := formatCase{
		format: inbox.FormatDebezium, typeHeader: "eventType", wantType: "order.created",
		record: func(i int, id string, orderID int64) *kgo.Record {
			payload := orderPayload(orderID)
			if i%2 == 1 { // JsonConverter: the payload column's text as a JSON string
				quoted, _ := json.Marshal(string(payload))
				payload = quoted
			}
			return &kgo.Record{Key: []byte(strconv.FormatInt(orderID, 10)), Value: payload,
				Headers: []kgo.RecordHeader{{Key: "id", Value: []byte(id)}, {Key: "eventType", Value: []byte("order.created")}}}
		},
		withoutID: []*kgo.Record{{Key: []byte("99"), Value: orderPayload(99),
			Headers: []kgo.RecordHeader{{Key: "eventType", Value: []byte("order.created")}}}},
	}
	t.Run("mariadb", func(t *testing.T) {
		c := c
		c.batchSize = 1
		testFormatEndToEnd(t, testenv.MariaDB, c)
	})
	t.Run("postgres", func(t *testing.T) {
		c := c
		c.batchSize = 4
		testFormatEndToEnd(t, testenv.PostgreSQL, c)
	})
}

// TestCloudEventsRecordsAreAppliedOnce: CloudEvents records in binary mode
// (ce_* headers), structured mode with data and structured mode with
// data_base64 are applied exactly once each although every one is
// delivered twice; the handler sees ce_type and the parsed time; a record
// without an id in either mode is dead-lettered as missing_id. Batches of
// 4, on MariaDB.
func TestCloudEventsRecordsAreAppliedOnce(t *testing.T) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	structured := []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}
	c := formatCase{
		format: inbox.FormatCloudEvents, batchSize: 4, wantType: "order.created", wantTime: true,
		record: func(i int, id string, orderID int64) *kgo.Record {
			key := []byte(strconv.FormatInt(orderID, 10))
			payload := orderPayload(orderID)
			attrs := `"specversion":"1.0","id":"` + id + `","source":"/herald/order","type":"order.created","time":"` + now + `","subject":"` + string(key) + `"`
			switch i % 3 {
			case 0: // binary
				return &kgo.Record{Key: key, Value: payload, Headers: []kgo.RecordHeader{
					{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_id", Value: []byte(id)},
					{Key: "ce_source", Value: []byte("/herald/order")}, {Key: "ce_type", Value: []byte("order.created")},
					{Key: "ce_time", Value: []byte(now)}, {Key: "ce_subject", Value: key},
					{Key: "content-type", Value: []byte("application/json")},
				}}
			case 1: // structured, data
				return &kgo.Record{Key: key, Headers: structured,
					Value: []byte(`{` + attrs + `,"datacontenttype":"application/json","data":` + string(payload) + `}`)}
			default: // structured, data_base64
				return &kgo.Record{Key: key, Headers: structured,
					Value: []byte(`{` + attrs + `,"datacontenttype":"application/json","data_base64":"` + base64.StdEncoding.EncodeToString(payload) + `"}`)}
			}
		},
		withoutID: []*kgo.Record{
			{Key: []byte("98"), Value: orderPayload(98), Headers: []kgo.RecordHeader{
				{Key: "ce_specversion", Value: []byte("1.0")}, {Key: "ce_type", Value: []byte("order.created")}}},
			{Key: []byte("99"), Headers: structured,
				Value: []byte(`{"specversion":"1.0","source":"/herald/order","type":"order.created","data":` + string(orderPayload(99)) + `}`)},
		},
	}
	testFormatEndToEnd(t, testenv.MariaDB, c)
}

func orderPayload(orderID int64) []byte {
	return []byte(`{"order_id":` + strconv.FormatInt(orderID, 10) + `,"customer_id":42,"total_amount":"19.98"}`)
}

// testFormatEndToEnd produces every event of c twice (the second copy a
// redelivery, after the records without an id), runs a Consumer with c's
// format, and checks: each event applied once, by the handler inside the
// inbox's transaction; consumed_events holding each id once; the records
// without an id in the dead-letter topic as missing_id; the group's lag 0.
func testFormatEndToEnd(t *testing.T, server testenv.Server, c formatCase) {
	db := testenv.NewHeraldDatabaseOn(t, server)
	createAppliedTable(t, db)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	consumerName := "format-" + string(c.format)
	group := topic + "-group"
	dlqTopic := kafka.DLQTopicName(topic, consumerName)
	deleteTopicAtCleanup(t, brokers, dlqTopic)

	wantOrder := map[string]int64{} // event id -> order id
	var first, again []*kgo.Record
	for i := range eventsPerFormatTest {
		id := uuid.Must(uuid.NewV7()).String()
		orderID := int64(i + 1)
		wantOrder[id] = orderID
		first = append(first, c.record(i, id, orderID))
		again = append(again, c.record(i, id, orderID))
	}
	var recs []*kgo.Record
	recs = append(recs, first...)
	recs = append(recs, c.withoutID...)
	recs = append(recs, again...)
	for _, r := range recs {
		r.Topic = topic
	}
	produce(t, newProducer(t, brokers), recs...)

	cons, err := inbox.New(inbox.Config{
		ConsumerName: consumerName, Brokers: brokers, Topics: []string{topic}, Group: group,
		DB: db.DB, Dialect: db.Dialect,
		Format: c.format, TypeHeader: c.typeHeader,
		Handler:   applyOrder(db.Dialect, c.wantType, c.wantTime),
		BatchSize: c.batchSize, MaxAttempts: 2,
		RetryBackoff: time.Millisecond, RetryBackoffMax: 5 * time.Millisecond,
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, cons)
	adm := testenv.NewAdmin(t, brokers)
	testenv.WaitFor(t, 30*time.Second, "every record finished", func() (bool, string) {
		lag, st := lagOf(t, adm, group, topic), cons.Stats()
		return lag == 0, fmt.Sprintf("lag %d, stats %+v", lag, st)
	})

	// Applied once each, with the order the record carried.
	applied := map[string][]int64{}
	rows, err := db.DB.Query("SELECT event_id, order_id FROM applied")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var orderID int64
		if err := rows.Scan(&id, &orderID); err != nil {
			t.Fatal(err)
		}
		applied[id] = append(applied[id], orderID)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(applied) != len(wantOrder) {
		t.Errorf("applied %d events, want %d: %v", len(applied), len(wantOrder), applied)
	}
	for id, orderID := range wantOrder {
		if got := applied[id]; len(got) != 1 || got[0] != orderID {
			t.Errorf("event %s (order %d) applied as %v, want once", id, orderID, got)
		}
	}
	consumed := map[string]int{}
	for _, id := range testenv.Strings(t, db.DB, db.SQL("SELECT event_id FROM consumed_events WHERE consumer_name = ?"), consumerName) {
		consumed[id]++
	}
	if len(consumed) != len(wantOrder) {
		t.Errorf("consumed_events holds %d ids, want %d: %v", len(consumed), len(wantOrder), consumed)
	}
	for id := range wantOrder {
		if consumed[id] != 1 {
			t.Errorf("consumed_events holds event %s %d times, want once", id, consumed[id])
		}
	}

	st := cons.Stats()
	if st.Processed != eventsPerFormatTest || st.Duplicates != eventsPerFormatTest {
		t.Errorf("stats: processed %d duplicates %d, want %d each", st.Processed, st.Duplicates, eventsPerFormatTest)
	}
	if len(st.DeadLettered) != 1 || st.DeadLettered[envelope.ClassMissingID] != int64(len(c.withoutID)) {
		t.Errorf("stats: dead-lettered %v, want %d missing_id only", st.DeadLettered, len(c.withoutID))
	}

	// The records without an id, byte for byte, as missing_id.
	dead := readAll(t, brokers, dlqTopic, len(c.withoutID))
	deadValues := map[string]bool{}
	for i, r := range dead {
		h := headers(r)
		if h[kafka.HeaderDLQErrorClass] != envelope.ClassMissingID || h[kafka.HeaderDLQTopic] != topic || h[kafka.HeaderDLQConsumer] != consumerName {
			t.Errorf("dead letter %d headers %v, want class %s from %s", i, h, envelope.ClassMissingID, topic)
		}
		deadValues[string(r.Value)] = true
	}
	for _, r := range c.withoutID {
		if !deadValues[string(r.Value)] {
			t.Errorf("record without an id %q is not in the dead-letter topic", r.Value)
		}
	}
}

// applyOrder is a handler of raw order payloads that is not idempotent by
// itself: one applied row per call. It unquotes a payload that is a JSON
// string literal (Kafka Connect's JsonConverter), and refuses, as a
// Permanent error, a message without the type or time it should carry or
// with a herald-only field set.
func applyOrder(d store.Dialect, wantType string, wantTime bool) inbox.HandlerFunc {
	insert := database.Rebind(d, "INSERT INTO applied (event_id, order_id, partition_no, offset_no) VALUES (?, ?, ?, ?)")
	return func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
		switch {
		case m.Type != wantType:
			return inbox.Permanent(fmt.Errorf("type %q, want %q", m.Type, wantType))
		case wantTime && m.OccurredAt.IsZero(), !wantTime && !m.OccurredAt.IsZero():
			return inbox.Permanent(fmt.Errorf("occurred at %v", m.OccurredAt))
		case m.Version != 0 || m.Payload != nil:
			return inbox.Permanent(fmt.Errorf("version %d payload %v", m.Version, m.Payload))
		}
		data := []byte(m.Data)
		if len(data) > 0 && data[0] == '"' {
			var text string
			if err := json.Unmarshal(data, &text); err != nil {
				return inbox.Permanent(err)
			}
			data = []byte(text)
		}
		var order struct {
			OrderID int64 `json:"order_id"`
		}
		if err := json.Unmarshal(data, &order); err != nil {
			return inbox.Permanent(fmt.Errorf("payload %q: %w", data, err))
		}
		_, err := tx.ExecContext(ctx, insert, m.EventID, order.OrderID, m.Partition, m.Offset)
		return err
	}
}
