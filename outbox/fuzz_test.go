package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
)

// FuzzValidation: whatever the input, Add either refuses it with a
// ValidationError before touching the database or would write it. A nil
// transaction makes any attempt to write panic, so only valid events may get
// past validation.
func FuzzValidation(f *testing.F) {
	f.Add("order", "1", "order.created", uint16(1), []byte(`{"a":1}`), "k", "v")
	f.Add("", "1", "x", uint16(0), []byte(`{`), "", "")
	f.Add("order", "\xff", "x", uint16(3), []byte(`null`), "traceparent", "00-x")
	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}, MaxPayloadBytes: 256})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, aggType, aggID, evType string, version uint16, payload []byte, hk, hv string) {
		e := outbox.Event{AggregateType: aggType, AggregateID: aggID, EventType: evType,
			SchemaVersion: version, Payload: payload, Headers: map[string]string{hk: hv}}
		defer func() {
			if r := recover(); r != nil {
				// Reaching the (nil) transaction means validation passed:
				// check that it should have.
				if !plausible(e) {
					t.Fatalf("invalid event got past validation: %+v", e)
				}
			}
		}()
		_, err := w.Add(context.Background(), nil, e)
		var ve *outbox.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("Add returned %v, want a ValidationError (or a write attempt)", err)
		}
	})
}

func plausible(e outbox.Event) bool {
	return e.AggregateType != "" && e.AggregateID != "" && e.EventType != "" &&
		e.SchemaVersion > 0 && len(e.Payload) > 0 && len(e.Payload) <= 256
}
