package testenv

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
)

// debeziumOutboxTable is an outbox table with Debezium's default column
// names.
const debeziumOutboxTable = `CREATE TABLE outbox (
	id CHAR(36) PRIMARY KEY,
	aggregatetype VARCHAR(255) NOT NULL,
	aggregateid VARCHAR(255) NOT NULL,
	type VARCHAR(255) NOT NULL,
	payload JSON)`

// debeziumContextHeaders are the headers Debezium 3 adds to every record
// while extended.headers.enabled is true (its default).
var debeziumContextHeaders = []string{
	"__debezium.context.connectorLogicalName", "__debezium.context.connectorName",
	"__debezium.context.runId", "__debezium.context.taskId",
}

// TestDebeziumTwoConnectorsInOneWorker runs two connectors with different
// settings in one worker, each on its own database, inserts rows right
// after StartDebezium returns (no probe: it returns once both stream) and
// checks each connector's records.
func TestDebeziumTwoConnectorsInOneWorker(t *testing.T) {
	brokers := KafkaBrokers(t)
	plainDB, expandedDB := NewDatabase(t), NewDatabase(t)
	// Debezium routes to outbox.event.<aggregatetype> by default: an
	// aggregate type per connector whose topic this test owns.
	plainTopic := NewTopic(t, brokers, TopicOptions{Prefix: "outbox.event."})
	expandedTopic := NewTopic(t, brokers, TopicOptions{Prefix: "outbox.event."})
	for _, db := range []*Database{plainDB, expandedDB} {
		db.Exec(t, debeziumOutboxTable)
	}

	d := StartDebezium(t,
		// Debezium's defaults: StringConverter (the worker's), the payload's
		// text, the context headers.
		DebeziumConnector{Name: "plain", Database: plainDB.Name},
		DebeziumConnector{Name: "expanded", Database: expandedDB.Name, Properties: map[string]string{
			"key.converter":                               "org.apache.kafka.connect.json.JsonConverter",
			"key.converter.schemas.enable":                "false",
			"value.converter":                             "org.apache.kafka.connect.json.JsonConverter",
			"value.converter.schemas.enable":              "false",
			"transforms.outbox.table.expand.json.payload": "true",
			"extended.headers.enabled":                    "false",
		}},
	)

	type row struct{ aggregateID, payload, plainValue, expandedValue string }
	rows := []row{
		{"order-1", `{"order_id": 1, "total": "19.98"}`, `{"order_id": 1, "total": "19.98"}`, `{"order_id":1,"total":"19.98"}`},
		{"order-2", `{"order_id": 2, "customer": {"id": "c-7"}}`, `{"order_id": 2, "customer": {"id": "c-7"}}`, `{"order_id":2,"customer":{"id":"c-7"}}`},
		{"order-1", `{"order_id":1,"status":"paid"}`, `{"order_id":1,"status":"paid"}`, `{"order_id":1,"status":"paid"}`},
	}
	insert := func(db *Database, aggregateType string) []string {
		var ids []string
		for _, r := range rows {
			id := uuid.NewString()
			db.Exec(t, "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, 'order.created', ?)",
				id, aggregateType, r.aggregateID, r.payload)
			ids = append(ids, id)
		}
		return ids
	}
	inserted := time.Now()
	plainIDs := insert(plainDB, strings.TrimPrefix(plainTopic, "outbox.event."))
	expandedIDs := insert(expandedDB, strings.TrimPrefix(expandedTopic, "outbox.event."))

	plain, firstPlain := consumeDebezium(t, d, brokers, plainTopic, len(rows))
	expanded, firstExpanded := consumeDebezium(t, d, brokers, expandedTopic, len(rows))
	t.Logf("debezium: build.sh %v, JVM start to streaming %v, first record %v (plain) and %v (expanded) after the first insert",
		d.BuildTook.Round(time.Millisecond), d.StartTook.Round(time.Millisecond),
		firstPlain.Sub(inserted).Round(time.Millisecond), firstExpanded.Sub(inserted).Round(time.Millisecond))

	for i, r := range rows {
		checkDebeziumRecord(t, "plain", plain[i], plainTopic, r.aggregateID, r.plainValue, plainIDs[i],
			append([]string{"id"}, debeziumContextHeaders...))
		checkDebeziumRecord(t, "expanded", expanded[i], expandedTopic, `"`+r.aggregateID+`"`, r.expandedValue, expandedIDs[i],
			[]string{"id"})
	}
	if got := header(plain[0], "__debezium.context.connectorLogicalName"); got != d.Connectors[0].Properties["topic.prefix"] {
		t.Errorf("plain: header connectorLogicalName %q, want the connector's topic.prefix %q", got, d.Connectors[0].Properties["topic.prefix"])
	}

	if err := d.Healthy(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exit := d.Stop(t); exit.Code != 143 {
		t.Errorf("after SIGTERM: %v, want exit status 143", exit)
	}
}

// checkDebeziumRecord compares one record with what Debezium should have
// written.
func checkDebeziumRecord(t *testing.T, connector string, rec *kgo.Record, topic, key, value, id string, headers []string) {
	t.Helper()
	if rec.Topic != topic {
		t.Errorf("%s: record of event %s on topic %s, want %s", connector, id, rec.Topic, topic)
	}
	if string(rec.Key) != key {
		t.Errorf("%s: event %s: key %q, want %q", connector, id, rec.Key, key)
	}
	if string(rec.Value) != value {
		t.Errorf("%s: event %s: value %s, want %s", connector, id, rec.Value, value)
	}
	if got := header(rec, "id"); got != id {
		t.Errorf("%s: header id %q, want %q", connector, got, id)
	}
	var keys []string
	for _, h := range rec.Headers {
		keys = append(keys, h.Key)
	}
	slices.Sort(keys)
	if want := slices.Sorted(slices.Values(headers)); !slices.Equal(keys, want) {
		t.Errorf("%s: event %s: headers %v, want %v", connector, id, keys, want)
	}
}

func header(rec *kgo.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// consumeDebezium reads n records of topic from its start, and when the
// first arrived; it fails t after a minute, or at once if d is no longer
// healthy.
func consumeDebezium(t *testing.T, d *Debezium, brokers []string, topic string, n int) ([]*kgo.Record, time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	var first time.Time
	for len(recs) < n {
		poll, cancelPoll := context.WithTimeout(ctx, 2*time.Second)
		fetches := cl.PollFetches(poll)
		cancelPoll()
		if len(recs) == 0 && !fetches.Empty() {
			first = time.Now()
		}
		recs = append(recs, fetches.Records()...)
		if ctx.Err() != nil {
			t.Fatalf("topic %s: %d of %d records within a minute", topic, len(recs), n)
		}
		if err := d.Healthy(ctx); err != nil && len(recs) < n {
			t.Fatal(err)
		}
	}
	if len(recs) > n {
		t.Errorf("topic %s: %d records, want %d", topic, len(recs), n)
	}
	return recs, first
}

func TestDebeziumPropertyValuesAreEscaped(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "outbox.event.${routedByValue}", "outbox.event.${routedByValue}"},
		{"backslash", `a\b`, `a\\b`},
		{"leading space", " x y", `\ x y`},
		{"line break", "a\nb", `a\nb`},
		{"beyond ASCII", "é😀", `\u00e9\ud83d\ude00`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := escapePropertyValue(tc.in); got != tc.want {
				t.Errorf("escapePropertyValue(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
