package record_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// TestRoute: the herald and cloudevents formats route by Topics, else
// DefaultTopic, else ErrNoRoute (the relay's rule, and replays').
func TestRoute(t *testing.T) {
	topics := map[string]string{"order": "orders.v1"}
	tests := []struct {
		typ, def, want string
		ok             bool
	}{
		{"order", "", "orders.v1", true},
		{"order", "misc.v1", "orders.v1", true},
		{"invoice", "misc.v1", "misc.v1", true},
		{"invoice", "", "", false},
	}
	for _, tt := range tests {
		enc, err := record.NewEncoder(record.Config{Topics: topics, DefaultTopic: tt.def})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := enc.Encode(testEvent(tt.typ))
		switch {
		case !tt.ok:
			if !errors.Is(err, record.ErrNoRoute) {
				t.Errorf("%s with default %q: err %v, want ErrNoRoute", tt.typ, tt.def, err)
			}
		case err != nil || rec.Topic != tt.want:
			t.Errorf("%s with default %q: topic %v, err %v; want %q", tt.typ, tt.def, rec, err, tt.want)
		}
	}
}

// TestFormatPerAggregateType: ByAggregateType overrides Default, and each
// format builds its own record.
func TestFormatPerAggregateType(t *testing.T) {
	enc, err := record.NewEncoder(record.Config{
		Topics: map[string]string{"order": "orders.v1", "invoice": "invoices.v1"},
		Formats: record.FormatConfig{
			Default:         record.Herald,
			ByAggregateType: map[string]record.Format{"invoice": record.CloudEvents, "payment": record.Debezium},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]record.Format{"order": record.Herald, "invoice": record.CloudEvents, "payment": record.Debezium} {
		if got := enc.FormatOf(typ); got != want {
			t.Errorf("FormatOf(%s) = %s, want %s", typ, got, want)
		}
	}
	order, err := enc.Encode(testEvent("order"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(order.Value) || !strings.Contains(string(order.Value), `"event_id"`) {
		t.Errorf("herald record's value %s: want the envelope", order.Value)
	}
	payment, err := enc.Encode(testEvent("payment"))
	if err != nil {
		t.Fatal(err)
	}
	if payment.Topic != "outbox.event.payment" || string(payment.Value) != `{"n":1}` {
		t.Errorf("debezium record: topic %s value %s", payment.Topic, payment.Value)
	}
}

// TestTopic: the topic of an aggregate type's records, in each format,
// as Encode routes them.
func TestTopic(t *testing.T) {
	enc, err := record.NewEncoder(record.Config{
		Topics: map[string]string{"order": "orders.v1"},
		Formats: record.FormatConfig{ByAggregateType: map[string]record.Format{"payment": record.Debezium, "invoice": record.CloudEvents},
			Debezium: record.DebeziumConfig{RouteTopicReplacement: "shop.${routedByValue}"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{"order": "orders.v1", "payment": "shop.payment"} {
		if got, err := enc.Topic(typ); err != nil || got != want {
			t.Errorf("Topic(%s) = %q, %v; want %q", typ, got, err, want)
		}
	}
	if _, err := enc.Topic("invoice"); !errors.Is(err, record.ErrNoRoute) {
		t.Errorf("Topic(invoice) without a route: %v, want ErrNoRoute", err)
	}
	byField, err := record.NewEncoder(record.Config{Formats: record.FormatConfig{Default: record.Debezium,
		Debezium: record.DebeziumConfig{RouteByField: "tenant"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := byField.Topic("order"); err == nil || !strings.Contains(err.Error(), `routes by field "tenant"`) {
		t.Errorf("Topic when routed by another field: %v", err)
	}
}

// TestConfigErrorsNameTheirField: every bad setting at once, each under
// its field's name.
func TestConfigErrorsNameTheirField(t *testing.T) {
	_, err := record.NewEncoder(record.Config{Formats: record.FormatConfig{
		Default:         "avro",
		ByAggregateType: map[string]record.Format{"order": "xml"},
	}})
	var fields []string
	for _, leaf := range config.Leaves(err) {
		var fe *config.Error
		if errors.As(leaf, &fe) {
			fields = append(fields, fe.Field)
		}
	}
	if strings.Join(fields, ",") != "Formats.Default,Formats.ByAggregateType[order]" {
		t.Errorf("fields %v (err %v)", fields, err)
	}
}

// TestEncodeRefusesADefectiveRow: a row herald cannot decode is an
// EncodeError in every format, before any route is looked up.
func TestEncodeRefusesADefectiveRow(t *testing.T) {
	for _, f := range record.Formats {
		enc, err := record.NewEncoder(record.Config{Formats: record.FormatConfig{Default: f}})
		if err != nil {
			t.Fatal(err)
		}
		e := testEvent("order")
		e.Defect = &store.RowDefect{Column: "fields", Problem: "is not a JSON object but a JSON array", Stored: "[]"}
		var encErr *record.EncodeError
		if _, err := enc.Encode(e); !errors.As(err, &encErr) || !strings.Contains(err.Error(), "column fields") {
			t.Errorf("%s: err %v, want an EncodeError naming the column", f, err)
		}
	}
}

// TestField: a foreign table's copied fields first, then herald's columns.
func TestField(t *testing.T) {
	e := testEvent("order")
	e.Fields = map[string]json.RawMessage{"tenant": json.RawMessage(`"acme"`), "id": json.RawMessage(`7`)}
	for name, want := range map[string]string{
		"tenant": `"acme"`, "id": `7`, "aggregate_type": `"order"`, "aggregate_id": `"42"`, "event_type": `"order.created"`,
		"aggregate_seq": `3`, "schema_version": `2`, "occurred_at": `1733356800123456`,
	} {
		if got, ok := record.Field(e, name); !ok || string(got) != want {
			t.Errorf("Field(%s) = %s, %v; want %s", name, got, ok, want)
		}
	}
	if _, ok := record.Field(e, "nope"); ok {
		t.Error("Field(nope) found")
	}
}

func testEvent(aggregateType string) store.Event {
	return store.Event{
		ID: "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f", AggregateType: aggregateType, AggregateID: "42", AggregateSeq: 3,
		EventType: "order.created", SchemaVersion: 2, Payload: []byte(`{"n":1}`),
		OccurredAt: time.Date(2024, 12, 5, 0, 0, 0, 123456000, time.UTC),
	}
}
