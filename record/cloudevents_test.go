package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cloudevents/sdk-go/protocol/kafka_sarama/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

const ceTopic = "orders.v1"

// ceFixture is the event the cloudevents tests encode: an occurred_at off
// UTC with microseconds, a payload with spaces and a "<" (binary mode keeps
// its bytes, structured mode compacts it without escaping), headers of its
// own and two in herald's reserved prefix.
func ceFixture() store.Event {
	return store.Event{
		ID:            "5f0c6b8e-3a1d-4c2e-9b7a-0d1e2f3a4b5c",
		AggregateType: "order",
		AggregateID:   "order-42",
		AggregateSeq:  3,
		EventType:     "order.placed",
		SchemaVersion: 2,
		Payload:       []byte(`{"total": 12.5, "note": "<gift>", "items": ["a", "b"]}`),
		Headers: map[string]string{
			"traceparent":          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			"tenant":               "acme",
			"herald-event-id":      "spoofed",
			"Herald-Aggregate-Seq": "9",
		},
		OccurredAt: time.Date(2026, 3, 1, 14, 30, 15, 123456000, time.FixedZone("CET", 3600)),
	}
}

// ceEncode returns e's record in the cloudevents format shaped by c, on
// ceTopic.
func ceEncode(t *testing.T, c CloudEventsConfig, e store.Event) (*kgo.Record, error) {
	t.Helper()
	enc, err := newCloudEvents(c)
	if err != nil {
		t.Fatalf("newCloudEvents: %v", err)
	}
	return enc.encode(e, ceTopic)
}

func header(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

// headerText renders headers one "name: value" a line, for failure
// messages a reader can compare.
func headerText(hs []kgo.RecordHeader) string {
	var b strings.Builder
	for _, h := range hs {
		b.WriteString("\n\t" + h.Key + ": " + string(h.Value))
	}
	return b.String()
}

// TestCloudEventsEncode: each mode's headers, in order, its value, key and
// topic; the event's own headers follow the binding's, less herald's
// reserved ones and those that would stand for an attribute herald sets.
func TestCloudEventsEncode(t *testing.T) {
	const (
		id      = "5f0c6b8e-3a1d-4c2e-9b7a-0d1e2f3a4b5c"
		at      = "2026-03-01T13:30:15.123456Z"
		payload = `{"total": 12.5, "note": "<gift>", "items": ["a", "b"]}`
	)
	stored := []kgo.RecordHeader{
		header("tenant", "acme"),
		header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
	}
	binary := func(source, typ, subject, time string) []kgo.RecordHeader {
		return []kgo.RecordHeader{
			header("ce_specversion", "1.0"),
			header("ce_id", id),
			header("ce_source", source),
			header("ce_type", typ),
			header("ce_subject", subject),
			header("ce_time", time),
			header("ce_schemaversion", "2"),
			header("content-type", "application/json"),
		}
	}
	structured := []kgo.RecordHeader{header("content-type", "application/cloudevents+json")}

	for _, tt := range []struct {
		name        string
		cfg         CloudEventsConfig
		edit        func(*store.Event)
		wantKey     string
		wantValue   string
		wantHeaders []kgo.RecordHeader
	}{
		{
			name:        "binary by default",
			wantKey:     "order-42",
			wantValue:   payload,
			wantHeaders: append(binary("/herald/order", "order.placed", "order-42", at), stored...),
		},
		{
			name:        "structured",
			cfg:         CloudEventsConfig{Mode: CloudEventsStructured},
			wantKey:     "order-42",
			wantValue:   `{"specversion":"1.0","id":"` + id + `","source":"/herald/order","type":"order.placed","subject":"order-42","time":"` + at + `","datacontenttype":"application/json","schemaversion":2,"data":{"total":12.5,"note":"<gift>","items":["a","b"]}}`,
			wantHeaders: append(slices.Clone(structured), stored...),
		},
		{
			name: "binary with a source of its own, an escaped aggregate type and whole seconds",
			cfg:  CloudEventsConfig{Mode: CloudEventsBinary, Source: "https://shop.example/{aggregate_type}/events"},
			edit: func(e *store.Event) {
				e.AggregateType = "line item"
				e.AggregateID = "li-7"
				e.EventType = "line_item.added"
				e.OccurredAt = time.Date(2026, 3, 1, 8, 30, 15, 0, time.FixedZone("EST", -5*3600))
				e.Headers = nil
			},
			wantKey:     "li-7",
			wantValue:   payload,
			wantHeaders: binary("https://shop.example/line%20item/events", "line_item.added", "li-7", "2026-03-01T13:30:15Z"),
		},
		{
			name: "structured with a source without placeholder and trailing zeros of the fraction dropped",
			cfg:  CloudEventsConfig{Mode: CloudEventsStructured, Source: "urn:shop:orders"},
			edit: func(e *store.Event) {
				e.OccurredAt = time.Date(2026, 3, 1, 13, 30, 15, 120000000, time.UTC)
				e.Payload = []byte(" [1, null, \"x\"]\n")
				e.Headers = nil
			},
			wantKey:     "order-42",
			wantValue:   `{"specversion":"1.0","id":"` + id + `","source":"urn:shop:orders","type":"order.placed","subject":"order-42","time":"2026-03-01T13:30:15.12Z","datacontenttype":"application/json","schemaversion":2,"data":[1,null,"x"]}`,
			wantHeaders: structured,
		},
		{
			name: "binary drops the event's headers that stand for an attribute",
			edit: func(e *store.Event) {
				e.Headers = map[string]string{
					"ce_type": "spoofed", "CE_ID": "spoofed", "ce_datacontenttype": "text/plain",
					"Content-Type": "text/plain", "herald-event-type": "spoofed",
					"ce_traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "cex": "kept",
				}
			},
			wantKey:   "order-42",
			wantValue: payload,
			wantHeaders: append(binary("/herald/order", "order.placed", "order-42", at),
				header("ce_traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
				header("cex", "kept")),
		},
		{
			name: "structured drops them too",
			cfg:  CloudEventsConfig{Mode: CloudEventsStructured},
			edit: func(e *store.Event) {
				e.Headers = map[string]string{"ce_source": "spoofed", "content-type": "text/plain", "tenant": "acme"}
				e.Payload = []byte(`{}`)
			},
			wantKey:     "order-42",
			wantValue:   `{"specversion":"1.0","id":"` + id + `","source":"/herald/order","type":"order.placed","subject":"order-42","time":"` + at + `","datacontenttype":"application/json","schemaversion":2,"data":{}}`,
			wantHeaders: append(slices.Clone(structured), header("tenant", "acme")),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := ceFixture()
			if tt.edit != nil {
				tt.edit(&e)
			}
			rec, err := ceEncode(t, tt.cfg, e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if rec.Topic != ceTopic {
				t.Errorf("topic %q, want %q", rec.Topic, ceTopic)
			}
			if string(rec.Key) != tt.wantKey {
				t.Errorf("key %q, want %q", rec.Key, tt.wantKey)
			}
			if string(rec.Value) != tt.wantValue {
				t.Errorf("value\n\t%s\nwant\n\t%s", rec.Value, tt.wantValue)
			}
			if !reflect.DeepEqual(rec.Headers, tt.wantHeaders) {
				t.Errorf("headers%s\nwant%s", headerText(rec.Headers), headerText(tt.wantHeaders))
			}
			if !rec.Timestamp.IsZero() {
				t.Errorf("timestamp %v, want zero (franz-go stamps the produce time)", rec.Timestamp)
			}
		})
	}
}

// TestCloudEventsEncodeRefusesEvents: an event that cannot be a valid
// CloudEvent as it is stored is an *EncodeError, in both modes.
func TestCloudEventsEncodeRefusesEvents(t *testing.T) {
	for _, tt := range []struct {
		name   string
		source string
		edit   func(*store.Event)
		want   string
	}{
		{name: "payload not JSON", edit: func(e *store.Event) { e.Payload = []byte(`{"total":`) }, want: "payload is not valid JSON"},
		{name: "empty payload", edit: func(e *store.Event) { e.Payload = nil }, want: "payload is not valid JSON"},
		{name: "no event id", edit: func(e *store.Event) { e.ID = "" }, want: "attribute id (event id) is empty"},
		{name: "blank event type", edit: func(e *store.Event) { e.EventType = " " }, want: "attribute type (event type) is empty"},
		{name: "no aggregate id", edit: func(e *store.Event) { e.AggregateID = "" }, want: "attribute subject (aggregate id) is empty"},
		{name: "event type not UTF-8", edit: func(e *store.Event) { e.EventType = "order.\xff" }, want: "attribute type (event type) is not UTF-8"},
		{name: "source empty for its aggregate type", source: "{aggregate_type}", edit: func(e *store.Event) { e.AggregateType = "" }, want: "attribute source is empty"},
	} {
		for _, mode := range []CloudEventsMode{CloudEventsBinary, CloudEventsStructured} {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				e := ceFixture()
				tt.edit(&e)
				rec, err := ceEncode(t, CloudEventsConfig{Mode: mode, Source: tt.source}, e)
				var encErr *EncodeError
				if !errors.As(err, &encErr) {
					t.Fatalf("Encode = %v, %v; want an *EncodeError", rec, err)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q, want it to say %q", err, tt.want)
				}
			})
		}
	}
}

// TestCloudEventsConfigValidate: every bad field is reported at once, each
// as a *config.Error naming it.
func TestCloudEventsConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  CloudEventsConfig
		want map[string]string // field: part of its message
	}{
		{name: "zero takes the defaults"},
		{name: "structured with a URN", cfg: CloudEventsConfig{Mode: CloudEventsStructured, Source: "urn:shop:{aggregate_type}"}},
		{name: "absolute URI without placeholder", cfg: CloudEventsConfig{Source: "https://shop.example/orders?from={aggregate_type}"}},
		{
			name: "bad mode",
			cfg:  CloudEventsConfig{Mode: "Binary"},
			want: map[string]string{"Mode": `must be binary or structured, got "Binary"`},
		},
		{
			name: "blank source",
			cfg:  CloudEventsConfig{Source: " \t"},
			want: map[string]string{"Source": "must not be blank"},
		},
		{
			name: "unknown placeholders",
			cfg:  CloudEventsConfig{Source: "/herald/{aggregate_type}/{tenant}/{}"},
			want: map[string]string{"Source": "unknown placeholder {tenant}, {} in"},
		},
		{
			name: "a brace outside the placeholder",
			cfg:  CloudEventsConfig{Source: "/herald/{aggregate_type"},
			want: map[string]string{"Source": "has a brace outside {aggregate_type}"},
		},
		{
			name: "not a URI-reference",
			cfg:  CloudEventsConfig{Source: "/herald/%zz/{aggregate_type}"},
			want: map[string]string{"Source": "is not a URI-reference"},
		},
		{
			name: "all at once",
			cfg:  CloudEventsConfig{Mode: "avro", Source: "::{aggregate_type}"},
			want: map[string]string{
				"Mode":   `got "avro"`,
				"Source": `"::{aggregate_type}" is not a URI-reference`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.validate()
			got := map[string]string{}
			for _, leaf := range config.Leaves(err) {
				var fe *config.Error
				if !errors.As(leaf, &fe) {
					t.Fatalf("error %v names no field", leaf)
				}
				got[fe.Field] = fe.Msg
			}
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tt.want))) {
				t.Fatalf("fields in error %v, want %v", got, tt.want)
			}
			for field, part := range tt.want {
				if !strings.Contains(got[field], part) {
					t.Errorf("%s: %q, want it to say %q", field, got[field], part)
				}
			}
			if _, newErr := newCloudEvents(tt.cfg); (newErr == nil) != (err == nil) {
				t.Errorf("newCloudEvents: %v, while validate: %v", newErr, err)
			}
		})
	}
}

// consumerMessage is rec as a Sarama consumer reads it from partition 3 at
// offset 17.
func consumerMessage(rec *kgo.Record) *sarama.ConsumerMessage {
	cm := &sarama.ConsumerMessage{Topic: rec.Topic, Partition: 3, Offset: 17, Key: rec.Key, Value: rec.Value}
	for _, h := range rec.Headers {
		cm.Headers = append(cm.Headers, &sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	return cm
}

// sdkEvent is e as the CloudEvents Go SDK builds it with herald's mapping,
// data as given: SetData takes a []byte as bytes (the SDK writes them as
// data_base64 in structured mode) and anything else as a value to encode
// as JSON.
func sdkEvent(t *testing.T, e store.Event, data any) cloudevents.Event {
	t.Helper()
	ev := cloudevents.New(cloudevents.CloudEventsVersionV1)
	ev.SetID(e.ID)
	ev.SetSource("/herald/" + e.AggregateType)
	ev.SetType(e.EventType)
	ev.SetSubject(e.AggregateID)
	ev.SetTime(e.OccurredAt)
	ev.SetExtension("schemaversion", int32(e.SchemaVersion))
	if err := ev.SetData(cloudevents.ApplicationJSON, data); err != nil {
		t.Fatalf("SetData: %v", err)
	}
	return ev
}

// TestCloudEventsSDKReadsRecords: the CloudEvents Go SDK, through its
// Kafka (Sarama) protocol binding, reads herald's records in both modes as
// valid events with every attribute herald set, and writes the same event
// as herald does.
func TestCloudEventsSDKReadsRecords(t *testing.T) {
	ctx := context.Background()
	e := ceFixture()
	var wantData any
	if err := json.Unmarshal(e.Payload, &wantData); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode     CloudEventsMode
		encoding binding.Encoding
		// wantExtensions are herald's schemaversion and the binding's own:
		// in binary mode it reads the record's partition, offset and topic
		// as extensions.
		wantExtensions map[string]any
		// force makes the SDK write in this mode.
		force func(context.Context) context.Context
		// sdkData is the data the SDK's event is given.
		sdkData any
	}{
		{
			mode: CloudEventsBinary, encoding: binding.EncodingBinary,
			wantExtensions: map[string]any{"schemaversion": "2", "kafkapartition": "3", "kafkaoffset": "17", "kafkatopic": ceTopic},
			force:          binding.WithForceBinary,
			sdkData:        e.Payload,
		},
		{
			mode: CloudEventsStructured, encoding: binding.EncodingStructured,
			wantExtensions: map[string]any{"schemaversion": int32(2)},
			force:          binding.WithForceStructured,
			sdkData:        json.RawMessage(e.Payload),
		},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			rec, err := ceEncode(t, CloudEventsConfig{Mode: tt.mode}, e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			msg := kafka_sarama.NewMessageFromConsumerMessage(consumerMessage(rec))
			if got := msg.ReadEncoding(); got != tt.encoding {
				t.Fatalf("the SDK reads the record in encoding %v, want %v", got, tt.encoding)
			}
			ev, err := binding.ToEvent(ctx, msg)
			if err != nil {
				t.Fatalf("binding.ToEvent: %v", err)
			}
			if err := ev.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			for _, a := range []struct{ name, got, want string }{
				{"ID", ev.ID(), e.ID},
				{"Source", ev.Source(), "/herald/order"},
				{"Type", ev.Type(), e.EventType},
				{"SpecVersion", ev.SpecVersion(), "1.0"},
				{"Subject", ev.Subject(), e.AggregateID},
				{"DataContentType", ev.DataContentType(), "application/json"},
			} {
				if a.got != a.want {
					t.Errorf("%s %q, want %q", a.name, a.got, a.want)
				}
			}
			if !ev.Time().Equal(e.OccurredAt) {
				t.Errorf("Time %v, want %v", ev.Time(), e.OccurredAt)
			}
			if tt.mode == CloudEventsBinary && !bytes.Equal(ev.Data(), e.Payload) {
				t.Errorf("Data %s, want the payload as stored %s", ev.Data(), e.Payload)
			}
			var data any
			if err := ev.DataAs(&data); err != nil {
				t.Fatalf("DataAs: %v", err)
			}
			if !reflect.DeepEqual(data, wantData) {
				t.Errorf("decoded data %v, want %v", data, wantData)
			}
			if got := ev.Extensions(); !maps.EqualFunc(got, tt.wantExtensions, func(a, b any) bool { return a == b }) {
				t.Errorf("extensions %#v, want %#v", got, tt.wantExtensions)
			}

			// What the SDK writes for the same event: the same binding
			// headers and value (as JSON, in structured mode).
			sdkEv := sdkEvent(t, e, tt.sdkData)
			var pm sarama.ProducerMessage
			if err := kafka_sarama.WriteProducerMessage(tt.force(ctx), binding.ToMessage(&sdkEv), &pm); err != nil {
				t.Fatalf("WriteProducerMessage: %v", err)
			}
			sdkHeaders := map[string]string{}
			for _, h := range pm.Headers {
				sdkHeaders[string(h.Key)] = string(h.Value)
			}
			ours := map[string]string{}
			for _, h := range rec.Headers {
				if h.Key == "content-type" || strings.HasPrefix(h.Key, "ce_") {
					ours[h.Key] = string(h.Value)
				}
			}
			if !reflect.DeepEqual(ours, sdkHeaders) {
				t.Errorf("binding headers %v, the SDK writes %v", ours, sdkHeaders)
			}
			sdkValue, err := pm.Value.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if tt.mode == CloudEventsBinary {
				if !bytes.Equal(rec.Value, sdkValue) {
					t.Errorf("value %s, the SDK writes %s", rec.Value, sdkValue)
				}
				return
			}
			var gotJSON, sdkJSON any
			if err := json.Unmarshal(rec.Value, &gotJSON); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(sdkValue, &sdkJSON); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotJSON, sdkJSON) {
				t.Errorf("value %s, the SDK writes %s", rec.Value, sdkValue)
			}
		})
	}
}
