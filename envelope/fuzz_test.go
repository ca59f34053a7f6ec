package envelope_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
)

func fuzzSeeds(f *testing.F) {
	f.Add([]byte(`{"event_id":"` + id + `","type":"order.created","version":1,"occurred_at":"2026-09-26T10:12:30.123456+08:00","data":` + orderData + `}`))
	f.Add([]byte(`{"event_id":"` + id + `","type":"order.cancelled","version":1,"data":{"order_id":1,"total_amount":"0"},"x":null}`))
	f.Add([]byte(`{"event_id":"` + id + `","type":"order.created","version":2,"data":{}}`))
	f.Add([]byte(`{"type":"order.created","version":1,"data":{}}`))
	f.Add([]byte(`{"event_id":"` + id + `","type":"order.created","version":1,"data":null}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{`))
	f.Add([]byte{0xff, 0xfe})
}

// FuzzParse: Parse never panics; what it accepts re-encodes and parses to
// the same envelope; what it refuses has a class.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := envelope.Parse(b)
		if err != nil {
			if envelope.ErrorClass(err) == "" {
				t.Fatalf("error without a class: %v", err)
			}
			return
		}
		again, err := envelope.Encode(e)
		if err != nil {
			t.Fatalf("Encode of a parsed envelope: %v", err)
		}
		e2, err := envelope.Parse(again)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if e2.EventID != e.EventID || e2.Type != e.Type || e2.Version != e.Version || !e2.OccurredAt.Equal(e.OccurredAt) {
			t.Fatalf("round trip changed the envelope: %+v -> %+v", e, e2)
		}
	})
}

// FuzzDecode: Decode never panics; every error is a classified
// *DecodeError; a decoded event has a payload of a registered type.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	reg := contract.NewRegistry()
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := reg.Decode(b)
		if err != nil {
			var de *envelope.DecodeError
			if !errors.As(err, &de) || de.Class() == "" {
				t.Fatalf("unclassified error %T: %v", err, err)
			}
			return
		}
		switch p := ev.Payload.(type) {
		case contract.OrderCreatedV1:
			if p.OrderID <= 0 {
				t.Fatalf("accepted order_id %d", p.OrderID)
			}
		case contract.OrderCancelledV1:
		default:
			t.Fatalf("payload of type %T", ev.Payload)
		}
		if !json.Valid(ev.Data) {
			t.Fatal("accepted invalid data")
		}
	})
}

// FuzzEncodeMatchesEncodingJSON: Encode, built by hand so the payload is
// read once, writes the bytes encoding/json writes with HTML escaping off,
// and refuses exactly the payloads encoding/json refuses.
func FuzzEncodeMatchesEncodingJSON(f *testing.F) {
	f.Add("order.created", `{"order_id": 1, "note": "<a & b>"}`, uint16(1), int64(1_700_000_000_123_456_789))
	f.Add("type \"quoted\"\n\u2028", `[1, 2,  3]`, uint16(65535), int64(0))
	f.Add("é", `not json`, uint16(2), int64(-5))
	f.Add("", ``, uint16(0), int64(42))
	f.Fuzz(func(t *testing.T, typ, data string, version uint16, nanos int64) {
		e := envelope.Envelope{EventID: "f9a6b944-6c45-4f16-8d88-024f714ccf1a", Type: typ, Version: version,
			OccurredAt: time.Unix(0, nanos).UTC(), Data: json.RawMessage(data)}
		got, err := envelope.Encode(e)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(e)
		if !json.Valid([]byte(data)) {
			if err == nil {
				t.Fatalf("Encode accepted data %q", data)
			}
			return
		}
		if wantErr != nil {
			t.Skip("encoding/json refuses the envelope itself:", wantErr)
		}
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Fatalf("Encode wrote\n%s\nencoding/json writes\n%s", got, w)
		}
	})
}
