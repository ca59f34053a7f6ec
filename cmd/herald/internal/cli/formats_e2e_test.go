package cli

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cloudevents/sdk-go/protocol/kafka_sarama/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestRecordFormatPerAggregateType, on PostgreSQL with a real relay:
// herald relay --record-format cloudevents --record-format invoice=herald
// --cloudevents-mode structured writes the order events as structured
// CloudEvents, which the CloudEvents Go SDK decodes and validates with
// every attribute as herald's mapping says, and the invoice events in
// herald's envelope; each on its route's topic, in its aggregate's order.
func TestRecordFormatPerAggregateType(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	brokers := testenv.KafkaBrokers(t)
	orders := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	invoices := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	var events []outbox.Event
	for i, agg := range []string{"7", "8", "7", "9", "8", "7"} {
		typ := "order"
		if i%3 == 2 {
			typ = "invoice"
		}
		events = append(events, outbox.Event{AggregateType: typ, AggregateID: agg, EventType: typ + ".changed", SchemaVersion: 2,
			Payload: json.RawMessage(`{"n": ` + string(rune('0'+i)) + `}`), Headers: map[string]string{"traceparent": "00-ab-cd-01"},
			OccurredAt: time.Date(2026, 12, 4, 10, 0, i, 123456000, time.FixedZone("", 8*3600))})
	}
	ids := d.AddEvents(t, events...)

	rel := testenv.StartRelay(t, testenv.RelayOptions{Name: "formats", DSN: d.DSN, Brokers: brokers,
		Topics: map[string]string{"order": orders, "invoice": invoices},
		Args: []string{"--record-format", "cloudevents", "--record-format", "invoice=herald", "--cloudevents-mode", "structured",
			"--cloudevents-source", "/shop/{aggregate_type}"}})
	defer func() {
		rel.Signal(syscall.SIGTERM)
		rel.Wait(t, 30*time.Second)
	}()

	byID := map[string]*kgo.Record{}
	for _, rec := range append(readRecords(t, brokers, orders, 4), readRecords(t, brokers, invoices, 2)...) {
		byID[rec.Topic+"/"+idOf(t, rec)] = rec
	}
	ctx := context.Background()
	for i, e := range events {
		if e.AggregateType == "invoice" {
			rec := byID[invoices+"/"+ids[i]]
			if rec == nil {
				t.Errorf("invoice event %s not on %s", ids[i], invoices)
				continue
			}
			if env, err := envelope.Parse(rec.Value); err != nil || env.EventID != ids[i] || string(rec.Key) != e.AggregateID {
				t.Errorf("invoice event %s: %v, %+v; want herald's envelope", ids[i], err, env)
			}
			continue
		}
		rec := byID[orders+"/"+ids[i]]
		if rec == nil {
			t.Errorf("order event %s not on %s", ids[i], orders)
			continue
		}
		cm := &sarama.ConsumerMessage{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Key: rec.Key, Value: rec.Value}
		for _, h := range rec.Headers {
			cm.Headers = append(cm.Headers, &sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		ev, err := binding.ToEvent(ctx, kafka_sarama.NewMessageFromConsumerMessage(cm))
		if err != nil {
			t.Errorf("order event %s: the SDK cannot read the record: %v", ids[i], err)
			continue
		}
		if err := ev.Validate(); err != nil {
			t.Errorf("order event %s: %v", ids[i], err)
		}
		if ev.ID() != ids[i] || ev.Source() != "/shop/order" || ev.Type() != "order.changed" || ev.SpecVersion() != "1.0" ||
			ev.Subject() != e.AggregateID || !ev.Time().Equal(e.OccurredAt) || ev.DataContentType() != "application/json" ||
			string(rec.Key) != e.AggregateID {
			t.Errorf("order event %s: %s", ids[i], ev)
		}
		var data, want any
		json.Unmarshal(ev.Data(), &data)
		json.Unmarshal(e.Payload, &want)
		if b1, b2 := mustJSON(data), mustJSON(want); b1 != b2 {
			t.Errorf("order event %s: data %s, want %s", ids[i], b1, b2)
		}
		if got := header(rec, "traceparent"); got != "00-ab-cd-01" {
			t.Errorf("order event %s: traceparent header %q", ids[i], got)
		}
	}
}

// idOf is a record's event id in any of herald's formats.
func idOf(t *testing.T, rec *kgo.Record) string {
	t.Helper()
	if id := header(rec, envelope.HeaderEventID); id != "" {
		return id
	}
	var ce struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(rec.Value, &ce); err != nil || ce.ID == "" {
		t.Fatalf("a record of %s without an event id: %q", rec.Topic, rec.Value)
	}
	return ce.ID
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
