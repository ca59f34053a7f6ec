package envelope_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
)

const id = "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f"

const orderData = `{"order_id":1,"customer_id":2,"items":[{"sku":"SKU-1","quantity":1,"unit_price":"1.00"}],"total_amount":"1.00"}`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"valid", `{"event_id":"` + id + `","type":"t","version":1,"data":{}}`, nil},
		{"unknown fields ignored", `{"event_id":"` + id + `","type":"t","version":1,"data":{},"extra":[1,2],"trace":{"x":1}}`, nil},
		{"upper-case uuid", `{"event_id":"0190F1C2-7D3E-7A41-8C55-9A0B1C2D3E4F","type":"t","version":1,"data":{}}`, nil},
		{"not json", `{"event_id":`, envelope.ErrMalformed},
		{"array", `[1,2]`, envelope.ErrMalformed},
		{"missing id", `{"type":"t","version":1,"data":{}}`, envelope.ErrMissingID},
		{"empty id", `{"event_id":"","type":"t","version":1,"data":{}}`, envelope.ErrMissingID},
		{"id not a uuid", `{"event_id":"order-1","type":"t","version":1,"data":{}}`, envelope.ErrMalformed},
		{"id too long", `{"event_id":"` + id + `0","type":"t","version":1,"data":{}}`, envelope.ErrMalformed},
		{"missing type", `{"event_id":"` + id + `","version":1,"data":{}}`, envelope.ErrMissingType},
		{"missing version", `{"event_id":"` + id + `","type":"t","data":{}}`, envelope.ErrMissingVersion},
		{"version overflows", `{"event_id":"` + id + `","type":"t","version":70000,"data":{}}`, envelope.ErrMalformed},
		{"version is a string", `{"event_id":"` + id + `","type":"t","version":"1","data":{}}`, envelope.ErrMalformed},
		{"missing data", `{"event_id":"` + id + `","type":"t","version":1}`, envelope.ErrMalformed},
		{"bad occurred_at", `{"event_id":"` + id + `","type":"t","version":1,"occurred_at":"yesterday","data":{}}`, envelope.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := envelope.Parse([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Parse = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestEncodeParseRoundTrip(t *testing.T) {
	in := envelope.Envelope{
		EventID: id, Type: "order.created", Version: 1,
		OccurredAt: time.Date(2026, 9, 26, 10, 12, 30, 123456000, time.FixedZone("", 8*3600)),
		Data:       json.RawMessage(orderData),
	}
	b, err := envelope.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := envelope.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !out.OccurredAt.Equal(in.OccurredAt) || out.EventID != in.EventID || string(out.Data) != orderData {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
}

func TestRegistryDecode(t *testing.T) {
	reg := contract.NewRegistry()
	env := func(typ, version, data string) string {
		return `{"event_id":"` + id + `","type":"` + typ + `","version":` + version + `,"data":` + data + `}`
	}
	tests := []struct {
		name      string
		in        string
		wantErr   error
		wantClass string
	}{
		{"order.created v1", env("order.created", "1", orderData), nil, ""},
		{"order.cancelled v1", env("order.cancelled", "1", orderData), nil, ""},
		{"unknown data fields ignored", env("order.created", "1", `{"order_id":1,"total_amount":"0","coupon":{"code":"X"},"currency":"EUR"}`), nil, ""},
		{"malformed json", `{"event_id":"` + id, envelope.ErrMalformed, envelope.ClassMalformed},
		{"missing id", `{"type":"order.created","version":1,"data":{}}`, envelope.ErrMissingID, envelope.ClassMissingID},
		{"missing type", `{"event_id":"` + id + `","version":1,"data":{}}`, envelope.ErrMissingType, envelope.ClassMalformed},
		{"unknown type", env("order.shipped", "1", `{}`), envelope.ErrUnknownType, envelope.ClassUnknownType},
		{"unsupported version", env("order.created", "2", orderData), envelope.ErrUnsupportedVersion, envelope.ClassUnsupportedVersion},
		{"data of the wrong shape", env("order.created", "1", `{"order_id":"one"}`), envelope.ErrMalformed, envelope.ClassMalformed},
		{"money as a float", env("order.created", "1", `{"order_id":1,"total_amount":19.98}`), envelope.ErrMalformed, envelope.ClassMalformed},
		{"money not decimal", env("order.created", "1", `{"order_id":1,"total_amount":"19,98"}`), envelope.ErrMalformed, envelope.ClassMalformed},
		{"invalid quantity", env("order.created", "1", `{"order_id":1,"total_amount":"1","items":[{"sku":"A","quantity":0,"unit_price":"1"}]}`), envelope.ErrMalformed, envelope.ClassMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := reg.Decode([]byte(tt.in))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if ev.EventID != id || ev.Payload == nil {
					t.Errorf("Decode = %+v", ev)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Decode error %v, want %v", err, tt.wantErr)
			}
			var de *envelope.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T is not a *DecodeError", err)
			}
			if got := envelope.ErrorClass(err); got != tt.wantClass || de.Class() != tt.wantClass {
				t.Errorf("class %q (DecodeError.Class %q), want %q", got, de.Class(), tt.wantClass)
			}
		})
	}
}

func TestDecodeErrorNamesTheEvent(t *testing.T) {
	reg := contract.NewRegistry()
	_, err := reg.Decode([]byte(`{"event_id":"` + id + `","type":"order.created","version":9,"data":{}}`))
	var de *envelope.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%v is not a *DecodeError", err)
	}
	if de.EventID != id || de.Type != "order.created" || de.Version != 9 {
		t.Errorf("DecodeError = %+v", de)
	}
	if want := "decode event " + id + " (order.created v9): unsupported event version: this consumer knows versions [1]"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestPayloadAs(t *testing.T) {
	ev, err := contract.NewRegistry().Decode([]byte(`{"event_id":"` + id + `","type":"order.created","version":1,"data":` + orderData + `}`))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := envelope.PayloadAs[contract.OrderCreatedV1](ev)
	want := contract.OrderCreatedV1{OrderID: 1, CustomerID: 2, TotalAmount: "1.00",
		Items: []contract.OrderItem{{SKU: "SKU-1", Quantity: 1, UnitPrice: "1.00"}}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("PayloadAs = %+v, %v", got, ok)
	}
	if _, ok := envelope.PayloadAs[contract.OrderCancelledV1](ev); ok {
		t.Error("PayloadAs accepted the wrong type")
	}
}

func TestRegisterPanicsOnProgrammingErrors(t *testing.T) {
	tests := []struct {
		name string
		do   func(r *envelope.Registry)
	}{
		{"duplicate", func(r *envelope.Registry) {
			envelope.Register[struct{}](r, "a", 1)
			envelope.Register[struct{}](r, "a", 1)
		}},
		{"version 0", func(r *envelope.Registry) { envelope.Register[struct{}](r, "a", 0) }},
		{"empty type", func(r *envelope.Registry) { envelope.Register[struct{}](r, "", 1) }},
		{"nil decoder", func(r *envelope.Registry) { r.Register("a", 1, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.do(envelope.NewRegistry())
		})
	}
}

// TestEncodeCopiesDataUnescaped: the envelope carries its data byte for
// byte (only insignificant whitespace removed), so a record is the payload
// plus a bounded overhead. encoding/json's default would write each <, >, &,
// U+2028 and U+2029 as a 6-byte \u escape, and a payload the writer accepts
// could grow past the producer's and the topic's limits.
func TestEncodeCopiesDataUnescaped(t *testing.T) {
	data := `{"note":"<b>fish & chips</b>` + "\u2028\u2029" + `","n":[1, 2]}`
	b, err := envelope.Encode(envelope.Envelope{EventID: id, Type: "t<&>", Version: 1, Data: json.RawMessage(data)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"data":{"note":"<b>fish & chips</b>` + "\u2028\u2029" + `","n":[1,2]}}`; !strings.HasSuffix(string(b), want) {
		t.Errorf("Encode = %s, want it to end with %s", b, want)
	}
	if !strings.Contains(string(b), `"type":"t<&>"`) {
		t.Errorf("Encode = %s, want the type unescaped", b)
	}
	if _, err := envelope.Parse(b); err != nil {
		t.Errorf("Parse(Encode) = %v", err)
	}
}

// TestDecodeErrorMessages: what a dead letter's herald-dlq-error header and
// the consumer's log say about records that cannot be decoded: the sentinel
// once (not "malformed envelope: malformed envelope: ..."), no version that
// the record did not carry, and `null` is malformed, not an envelope
// without an id.
func TestDecodeErrorMessages(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantClass string
		want      string
	}{
		{"not json", `{"event_id":`, envelope.ClassMalformed,
			"decode event: malformed envelope: unexpected end of JSON input"},
		{"null", `null`, envelope.ClassMalformed, "decode event: malformed envelope: not a JSON object"},
		{"a string", `"hello"`, envelope.ClassMalformed,
			"decode event: malformed envelope: json: cannot unmarshal string into Go value of type envelope.Envelope"},
		{"no event_id", `{"type":"order.created","version":1,"data":{}}`, envelope.ClassMissingID,
			"decode event (order.created v1): envelope has no event_id"},
		{"no event_id nor version", `{"type":"order.created","data":{}}`, envelope.ClassMissingID,
			"decode event (order.created): envelope has no event_id"},
		{"id not a uuid", `{"event_id":"order-1","type":"order.created","version":1,"data":{}}`, envelope.ClassMalformed,
			`decode event order-1 (order.created v1): malformed envelope: event_id "order-1" is not a UUID`},
		{"version of the wrong type", `{"event_id":"` + id + `","type":"order.created","version":"1","data":{}}`, envelope.ClassMalformed,
			"decode event " + id + " (order.created): malformed envelope: json: cannot unmarshal string into Go struct field Envelope.version of type uint16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.NewRegistry().Decode([]byte(tt.in))
			if got := envelope.ErrorClass(err); got != tt.wantClass {
				t.Errorf("class %q, want %q (%v)", got, tt.wantClass, err)
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("Error() = %q\nwant      %q", err, tt.want)
			}
		})
	}
}

// TestIsReservedHeader: herald's prefix in any case is reserved, and
// nothing else.
func TestIsReservedHeader(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{envelope.HeaderEventID, true},
		{envelope.HeaderAggregateSeq, true},
		{"herald-dlq-error", true},
		{"Herald-Event-Id", true},
		{"HERALD-", true},
		{"herald", false},
		{"heraldic", false},
		{"x-herald-event-id", false},
		{"traceparent", false},
		{"", false},
	} {
		if got := envelope.IsReservedHeader(tt.name); got != tt.want {
			t.Errorf("IsReservedHeader(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
