package store

import (
	"strings"
	"testing"
)

// TestDecode: RawEvent.Decode names the first bad column of a row, in
// column order, and decodes a good row's headers whatever else is wrong.
func TestDecode(t *testing.T) {
	good := RawEvent{ID: "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f", AggregateType: "order", AggregateID: "1",
		AggregateSeq: 1, EventType: "order.created", SchemaVersion: 1, Payload: []byte(`{"n":1}`),
		Headers: []byte(`{"tenant":"acme"}`)}
	with := func(f func(*RawEvent)) RawEvent {
		r := good
		f(&r)
		return r
	}
	long := strings.Repeat("x", RowDefectStoredMaxLen+10)
	tests := []struct {
		name            string
		raw             RawEvent
		column, problem string
	}{
		{"good", good, "", ""},
		{"headers NULL", with(func(r *RawEvent) { r.Headers = nil }), "", ""},
		{"headers JSON null", with(func(r *RawEvent) { r.Headers = []byte(` null`) }), "", ""},
		{"uppercase id", with(func(r *RawEvent) { r.ID = strings.ToUpper(r.ID) }), "", ""},
		{"id with braces", with(func(r *RawEvent) { r.ID = "{" + r.ID[:34] + "}" }), "id", "is not a UUID"},
		{"blank aggregate id", with(func(r *RawEvent) { r.AggregateID = " \t" }), "aggregate_id", "is empty"},
		{"aggregate type not UTF-8", with(func(r *RawEvent) { r.AggregateType = "\xff" }), "aggregate_type", "is not valid UTF-8"},
		{"NUL in event type", with(func(r *RawEvent) { r.EventType = "a\x00" }), "event_type", "contains a NUL character"},
		{"seq 0", with(func(r *RawEvent) { r.AggregateSeq = 0 }), "aggregate_seq", "must be 1 or more"},
		{"version negative", with(func(r *RawEvent) { r.SchemaVersion = -1 }), "schema_version", "must be 1 to 65535"},
		{"version 65535", with(func(r *RawEvent) { r.SchemaVersion = 65535 }), "", ""},
		{"payload empty", with(func(r *RawEvent) { r.Payload = nil }), "payload", "is not a valid JSON document"},
		{"payload not UTF-8", with(func(r *RawEvent) { r.Payload = []byte("\"\x80\"") }), "payload", "is not valid UTF-8"},
		{"headers a string", with(func(r *RawEvent) { r.Headers = []byte(`"a"`) }), "headers", "but a JSON string"},
		{"headers true", with(func(r *RawEvent) { r.Headers = []byte(`true`) }), "headers", "but a JSON boolean"},
		{"header value object", with(func(r *RawEvent) { r.Headers = []byte(`{"a":"x","b":{}}`) }), "headers", `"b" whose value is a JSON object`},
		{"header values: the first bad by name", with(func(r *RawEvent) { r.Headers = []byte(`{"z":1,"y":true}`) }), "headers", `"y" whose value is a JSON boolean`},
		{"headers not UTF-8", with(func(r *RawEvent) { r.Headers = []byte("{\"a\":\"\xff\"}") }), "headers", "is not valid UTF-8"},
		{"headers truncated", with(func(r *RawEvent) { r.Headers = []byte(`{"a":`) }), "headers", "is not valid JSON"},
		{"id before headers", with(func(r *RawEvent) { r.ID, r.Headers = "x", []byte(`[]`) }), "id", "is not a UUID"},
		{"long stored value", with(func(r *RawEvent) { r.EventType = long + "\x00" }), "event_type", "contains a NUL"},
		{"fields an object", with(func(r *RawEvent) { r.Fields = []byte(`{"tenant": 7, "type": "x"}`) }), "", ""},
		{"fields JSON null", with(func(r *RawEvent) { r.Fields = []byte(`null`) }), "", ""},
		{"fields an array", with(func(r *RawEvent) { r.Fields = []byte(`[7]`) }), "fields", "is not a JSON object but a JSON array"},
		{"fields truncated", with(func(r *RawEvent) { r.Fields = []byte(`{"a":`) }), "fields", "is not valid JSON"},
		{"headers before fields", with(func(r *RawEvent) { r.Headers, r.Fields = []byte(`1`), []byte(`1`) }), "headers", "JSON number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.raw.Decode()
			if tt.column == "" {
				if e.Defect != nil {
					t.Fatalf("defect %v, want none", e.Defect)
				}
			} else if e.Defect == nil || e.Defect.Column != tt.column || !strings.Contains(e.Defect.Problem, tt.problem) {
				t.Fatalf("defect %+v, want column %s, problem %q", e.Defect, tt.column, tt.problem)
			}
			if tt.raw.Fields != nil && e.Defect == nil && string(tt.raw.Fields) != "null" && len(e.Fields) != 2 {
				t.Errorf("fields %v, want the stored object's two", e.Fields)
			}
			if d := e.Defect; d != nil {
				if len(d.Stored) > RowDefectStoredMaxLen || d.StoredBytes < len(d.Stored) {
					t.Errorf("stored %d of %d bytes, at most %d kept", len(d.Stored), d.StoredBytes, RowDefectStoredMaxLen)
				}
				if msg := d.Error(); !strings.HasPrefix(msg, "column "+tt.column+" ") || len(msg) > LastErrorMaxLen {
					t.Errorf("error %q (%d bytes): want it to name the column and fit last_error", msg, len(msg))
				}
			}
			if tt.raw.Headers != nil && tt.raw.ID != "x" && tt.column != "headers" && e.Headers["tenant"] != "acme" && string(tt.raw.Headers) != " null" {
				t.Errorf("headers %v, want them decoded", e.Headers)
			}
			if tt.raw.SchemaVersion == 65535 && e.SchemaVersion != 65535 {
				t.Errorf("schema version %d", e.SchemaVersion)
			}
		})
	}
}

// FuzzDecodeHeaders: whatever a headers column holds, Decode does not
// panic, and headers it accepts are names and values the writer accepts
// (not blank, valid UTF-8, no NUL).
func FuzzDecodeHeaders(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":1}`, `[]`, `null`, `{"a":"\u0000"}`, `{"":"x"}`, "{\"a\":\"\xff\"}", `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stored []byte) {
		e := RawEvent{ID: "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f", AggregateType: "order", AggregateID: "1",
			AggregateSeq: 1, EventType: "order.created", SchemaVersion: 1, Payload: []byte(`{}`), Headers: stored}.Decode()
		if e.Defect != nil {
			if e.Defect.Column != "headers" {
				t.Fatalf("defect in column %s", e.Defect.Column)
			}
			return
		}
		for k, v := range e.Headers {
			if textProblem(k, true) != "" || textProblem(v, false) != "" {
				t.Fatalf("accepted header %q: %q", k, v)
			}
		}
	})
}
