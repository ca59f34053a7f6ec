package inbox

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/config"
)

const (
	testID    = "0190f1c2-0000-7000-8000-000000000001"
	testOrder = `{"order_id":7,"total_amount":"19.98"}`
)

func hdrs(kv ...string) []kgo.RecordHeader {
	var h []kgo.RecordHeader
	for i := 0; i+1 < len(kv); i += 2 {
		h = append(h, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return h
}

// decodeCase is one record and what decode must make of it: either the
// fields the handler sees, or the dead-letter class of the error.
type decodeCase struct {
	name      string
	headers   []kgo.RecordHeader
	value     string
	wantClass string // the error's class; "" when the record decodes
	wantID    string
	wantType  string
	wantAt    time.Time
	wantData  string
}

func runDecodeCases(t *testing.T, cfg Config, tests []decodeCase) {
	t.Helper()
	c := &Consumer{cfg: cfg.withDefaults()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &kgo.Record{Topic: "orders", Partition: 2, Offset: 9, Key: []byte("7"), Value: []byte(tt.value), Headers: tt.headers}
			m, err := c.decode(rec)
			if tt.wantClass != "" {
				if got := envelope.ErrorClass(err); got != tt.wantClass {
					t.Fatalf("decode error %v of class %q, want class %q", err, got, tt.wantClass)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if m.EventID != tt.wantID || m.Type != tt.wantType || string(m.Data) != tt.wantData || !m.OccurredAt.Equal(tt.wantAt) {
				t.Errorf("decoded id %q type %q at %v data %q, want %q %q %v %q",
					m.EventID, m.Type, m.OccurredAt, m.Data, tt.wantID, tt.wantType, tt.wantAt, tt.wantData)
			}
			if m.Version != 0 || m.Payload != nil {
				t.Errorf("version %d payload %v: want 0 and nil outside the herald format", m.Version, m.Payload)
			}
			if m.Topic != "orders" || m.Partition != 2 || m.Offset != 9 || string(m.Key) != "7" || len(m.Headers) != len(uniqueKeys(tt.headers)) {
				t.Errorf("record fields %s/%d/%d key %q headers %v", m.Topic, m.Partition, m.Offset, m.Key, m.Headers)
			}
		})
	}
}

func uniqueKeys(h []kgo.RecordHeader) []string {
	var keys []string
	for _, x := range h {
		if !slices.Contains(keys, x.Key) {
			keys = append(keys, x.Key)
		}
	}
	return keys
}

// TestDecodeDebezium: the event id is the "id" header (missing or empty:
// missing_id; not a UUID: malformed), the type the header TypeHeader names,
// the data the value as it is, JSON string literal included.
func TestDecodeDebezium(t *testing.T) {
	tests := []decodeCase{
		{name: "id header", headers: hdrs("id", testID, "eventType", "order.created"), value: testOrder,
			wantID: testID, wantData: testOrder}, // no TypeHeader: no type
		{name: "JsonConverter string payload", headers: hdrs("id", testID), value: `"{\"order_id\":7}"`,
			wantID: testID, wantData: `"{\"order_id\":7}"`},
		{name: "repeated id header: the last one", headers: hdrs("id", "not-a-uuid", "id", testID), value: testOrder,
			wantID: testID, wantData: testOrder},
		{name: "tombstone", headers: hdrs("id", testID), value: "", wantID: testID, wantData: ""},
		{name: "no id header", headers: hdrs("eventType", "order.created"), value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "no headers", value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "empty id header", headers: hdrs("id", ""), value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "id not a UUID", headers: hdrs("id", "42"), value: testOrder, wantClass: envelope.ClassMalformed},
		{name: "id with braces", headers: hdrs("id", "{"+testID+"}"), value: testOrder, wantClass: envelope.ClassMalformed},
		{name: "ce_id is not Debezium's id", headers: hdrs("ce_id", testID), value: testOrder, wantClass: envelope.ClassMissingID},
	}
	runDecodeCases(t, Config{Format: FormatDebezium}, tests)

	t.Run("TypeHeader", func(t *testing.T) {
		runDecodeCases(t, Config{Format: FormatDebezium, TypeHeader: "eventType"}, []decodeCase{
			{name: "present", headers: hdrs("id", testID, "eventType", "order.created"), value: testOrder,
				wantID: testID, wantType: "order.created", wantData: testOrder},
			{name: "absent", headers: hdrs("id", testID), value: testOrder, wantID: testID, wantData: testOrder},
			{name: "another case is another header", headers: hdrs("id", testID, "eventtype", "order.created"), value: testOrder,
				wantID: testID, wantData: testOrder},
		})
	})
}

// TestDecodeCloudEvents: binary mode reads ce_id, ce_type and ce_time and
// takes the value as the data; structured mode (content-type
// application/cloudevents+json) reads the JSON event, its data member raw
// or its data_base64 decoded.
func TestDecodeCloudEvents(t *testing.T) {
	at := time.Date(2026, 9, 26, 10, 12, 30, 123456000, time.FixedZone("", 8*3600))
	binary := func(kv ...string) []kgo.RecordHeader {
		return hdrs(append([]string{"ce_specversion", "1.0", "ce_source", "/herald/order"}, kv...)...)
	}
	structured := hdrs("content-type", "application/cloudevents+json")
	event := func(members string) string {
		return `{"specversion":"1.0","source":"/herald/order","subject":"7","datacontenttype":"application/json"` + members + `}`
	}
	tests := []decodeCase{
		// Binary mode.
		{name: "binary", headers: binary("ce_id", testID, "ce_type", "order.created", "ce_time", "2026-09-26T10:12:30.123456+08:00", "content-type", "application/json"),
			value: testOrder, wantID: testID, wantType: "order.created", wantAt: at, wantData: testOrder},
		{name: "binary without time or type", headers: binary("ce_id", testID), value: testOrder, wantID: testID, wantData: testOrder},
		{name: "binary time in UTC without fraction", headers: binary("ce_id", testID, "ce_time", "2026-09-26T02:12:30Z"), value: testOrder,
			wantID: testID, wantAt: time.Date(2026, 9, 26, 2, 12, 30, 0, time.UTC), wantData: testOrder},
		{name: "binary without ce_specversion", headers: hdrs("ce_id", testID), value: testOrder, wantID: testID, wantData: testOrder},
		{name: "binary without ce_id", headers: binary("ce_type", "order.created"), value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "binary with an empty ce_id", headers: binary("ce_id", ""), value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "binary: Debezium's id is not ce_id", headers: binary("id", testID), value: testOrder, wantClass: envelope.ClassMissingID},
		{name: "binary ce_id not a UUID", headers: binary("ce_id", "order-7-created"), value: testOrder, wantClass: envelope.ClassMalformed},
		{name: "binary bad ce_time", headers: binary("ce_id", testID, "ce_time", "26/09/2026 10:12"), value: testOrder, wantClass: envelope.ClassMalformed},
		{name: "binary ce_time without zone", headers: binary("ce_id", testID, "ce_time", "2026-09-26T10:12:30"), value: testOrder, wantClass: envelope.ClassMalformed},
		{name: "binary specversion 0.3", headers: hdrs("ce_specversion", "0.3", "ce_id", testID), value: testOrder, wantClass: envelope.ClassMalformed},

		// Structured mode.
		{name: "structured data", headers: structured,
			value:  event(`,"id":"` + testID + `","type":"order.created","time":"2026-09-26T10:12:30.123456+08:00","data":` + testOrder),
			wantID: testID, wantType: "order.created", wantAt: at, wantData: testOrder},
		{name: "structured data_base64", headers: structured,
			value:  event(`,"id":"` + testID + `","type":"order.created","data_base64":"AAEC/w=="`),
			wantID: testID, wantType: "order.created", wantData: "\x00\x01\x02\xff"},
		{name: "structured string data stays a JSON string", headers: structured,
			value:  event(`,"id":"` + testID + `","data":"<order id=\"7\"/>"`),
			wantID: testID, wantData: `"<order id=\"7\"/>"`},
		{name: "structured without data", headers: structured, value: event(`,"id":"` + testID + `"`), wantID: testID},
		{name: "structured content type with parameters", headers: hdrs("content-type", "Application/CloudEvents+JSON; charset=UTF-8"),
			value: event(`,"id":"` + testID + `","data":{}`), wantID: testID, wantData: `{}`},
		{name: "structured mode ignores ce_ headers", headers: hdrs("content-type", "application/cloudevents+json", "ce_id", testID),
			value: event(`,"type":"order.created","data":{}`), wantClass: envelope.ClassMissingID},
		{name: "structured without id", headers: structured, value: event(`,"type":"order.created","data":` + testOrder), wantClass: envelope.ClassMissingID},
		{name: "structured with an empty id", headers: structured, value: event(`,"id":"","data":{}`), wantClass: envelope.ClassMissingID},
		{name: "structured id not a UUID", headers: structured, value: event(`,"id":"A234-1234-1234","data":{}`), wantClass: envelope.ClassMalformed},
		{name: "structured id a number", headers: structured, value: event(`,"id":42,"data":{}`), wantClass: envelope.ClassMalformed},
		{name: "structured bad time", headers: structured, value: event(`,"id":"` + testID + `","time":"yesterday","data":{}`), wantClass: envelope.ClassMalformed},
		{name: "structured bad data_base64", headers: structured, value: event(`,"id":"` + testID + `","data_base64":"not base64!"`), wantClass: envelope.ClassMalformed},
		{name: "structured data and data_base64", headers: structured, value: event(`,"id":"` + testID + `","data":{},"data_base64":"AA=="`), wantClass: envelope.ClassMalformed},
		{name: "structured specversion 0.3", headers: structured, value: `{"specversion":"0.3","id":"` + testID + `","data":{}}`, wantClass: envelope.ClassMalformed},
		{name: "structured value not JSON", headers: structured, value: `{"id":"` + testID, wantClass: envelope.ClassMalformed},
		{name: "structured value null", headers: structured, value: `null`, wantClass: envelope.ClassMalformed},
		{name: "structured value an array", headers: structured, value: `[{"id":"` + testID + `"}]`, wantClass: envelope.ClassMalformed},
		{name: "batched mode", headers: hdrs("content-type", "application/cloudevents-batch+json"),
			value: `[` + event(`,"id":"`+testID+`"`) + `]`, wantClass: envelope.ClassMalformed},
	}
	runDecodeCases(t, Config{Format: FormatCloudEvents}, tests)
}

// TestDecodeHeraldUnchanged: the default format still decodes herald's
// envelope with the Registry, whatever the headers say.
func TestDecodeHeraldUnchanged(t *testing.T) {
	type order struct {
		OrderID int64 `json:"order_id"`
	}
	reg := envelope.NewRegistry()
	envelope.Register[order](reg, "order.created", 1)
	c := &Consumer{cfg: Config{Registry: reg}.withDefaults()}
	value := `{"event_id":"` + testID + `","type":"order.created","version":1,"occurred_at":"2026-09-26T02:12:30Z","data":{"order_id":7}}`
	m, err := c.decode(&kgo.Record{Value: []byte(value), Headers: hdrs("id", "0190f1c2-0000-7000-8000-000000000009", "ce_id", "x")})
	if err != nil {
		t.Fatal(err)
	}
	if m.EventID != testID || m.Version != 1 || m.Payload != (order{OrderID: 7}) {
		t.Errorf("decoded %+v", m.Event)
	}
	_, err = c.decode(&kgo.Record{Value: []byte(`{"type":"order.created","version":1,"data":{}}`), Headers: hdrs("id", testID)})
	if envelope.ErrorClass(err) != envelope.ClassMissingID {
		t.Errorf("an envelope without event_id but with an id header: %v, want missing_id", err)
	}
}

// TestDecodeErrorNamesTheRecord: a malformed record's error names its
// format and the id as far as it was read (dead letters and logs carry it),
// and matches the envelope sentinel of its class.
func TestDecodeErrorNamesTheRecord(t *testing.T) {
	c := &Consumer{cfg: Config{Format: FormatCloudEvents}.withDefaults()}
	_, err := c.decode(&kgo.Record{Headers: hdrs("ce_id", testID, "ce_time", "never")})
	var de *decodeError
	if !errors.As(err, &de) || de.eventID != testID || !errors.Is(err, envelope.ErrMalformed) ||
		!strings.Contains(err.Error(), "cloudevents record "+testID) || !strings.Contains(err.Error(), "ce_time") {
		t.Errorf("error %v (%+v)", err, de)
	}
	_, err = c.decode(&kgo.Record{})
	if !errors.Is(err, envelope.ErrMissingID) || !strings.Contains(err.Error(), "header ce_id is missing or empty") {
		t.Errorf("error %v", err)
	}
}

// TestConfigValidateFormat: Format takes one of three values; the Registry
// belongs to the herald format alone (required there, refused elsewhere);
// TypeHeader to the debezium format. Each error names its field.
func TestConfigValidateFormat(t *testing.T) {
	valid := func() Config {
		return Config{
			ConsumerName: "inventory", Brokers: []string{"b:9092"}, Topics: []string{"orders.v1"},
			DB: &sql.DB{}, Dialect: serverErrors{},
			Handler: HandlerFunc(func(context.Context, *sql.Tx, Message) error { return nil }),
		}
	}
	tests := []struct {
		name       string
		format     Format
		registry   bool
		typeHeader string
		wantFields []string // nil: valid
		wantMsg    string
	}{
		{name: "default format with a registry", registry: true},
		{name: "herald with a registry", format: FormatHerald, registry: true},
		{name: "debezium", format: FormatDebezium},
		{name: "debezium with a type header", format: FormatDebezium, typeHeader: "eventType"},
		{name: "cloudevents", format: FormatCloudEvents},
		{name: "default format without a registry", wantFields: []string{"Registry"}, wantMsg: "is required"},
		{name: "herald without a registry", format: FormatHerald, wantFields: []string{"Registry"}, wantMsg: "is required"},
		{name: "debezium with a registry", format: FormatDebezium, registry: true, wantFields: []string{"Registry"},
			wantMsg: "only the herald format's records carry a type and version to decode by"},
		{name: "cloudevents with a registry", format: FormatCloudEvents, registry: true, wantFields: []string{"Registry"},
			wantMsg: "only the herald format's records carry a type and version to decode by"},
		{name: "unknown format", format: "avro", wantFields: []string{"Format"}, wantMsg: `unknown format "avro"`},
		{name: "format in capitals", format: "Debezium", wantFields: []string{"Format"}, wantMsg: "want herald, debezium or cloudevents"},
		{name: "type header with cloudevents", format: FormatCloudEvents, typeHeader: "eventType", wantFields: []string{"TypeHeader"}},
		{name: "type header with herald", registry: true, typeHeader: "eventType", wantFields: []string{"TypeHeader"}},
		{name: "unknown format with a type header", format: "kafka-connect", typeHeader: "eventType", wantFields: []string{"Format", "TypeHeader"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			cfg.Format, cfg.TypeHeader = tt.format, tt.typeHeader
			if tt.registry {
				cfg.Registry = envelope.NewRegistry()
			}
			err := cfg.validate()
			var fields []string
			for _, leaf := range config.Leaves(err) {
				var ce *ConfigError
				if !errors.As(leaf, &ce) {
					t.Fatalf("%v is not a *ConfigError", leaf)
				}
				fields = append(fields, ce.Field)
			}
			if !slices.Equal(fields, tt.wantFields) {
				t.Fatalf("validate = %v: fields %q, want %q", err, fields, tt.wantFields)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("validate = %v, want it to say %q", err, tt.wantMsg)
			}
		})
	}
}

// TestConfigFormatDefault: an empty Format is the herald format.
func TestConfigFormatDefault(t *testing.T) {
	if got := (Config{}).withDefaults().Format; got != FormatHerald {
		t.Errorf("default Format %q, want %q", got, FormatHerald)
	}
}
