package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/herald-outbox/herald/envelope"
)

// RowDefectStoredMaxLen is the most bytes of a bad column's stored value a
// RowDefect keeps.
const RowDefectStoredMaxLen = 2048

// rowDefectQuotedMaxLen is the most bytes of the stored value a
// RowDefect's message quotes (it becomes last_error, at most
// LastErrorMaxLen characters).
const rowDefectQuotedMaxLen = 200

// RawEvent is the part of an outbox row that becomes a published record,
// as the database (a claim's read, a change stream's row image) returned
// it. Nothing is decoded yet: a row written without outbox.Writer (plain
// SQL, another language) may hold anything its columns' types allow, and
// Decode says what is wrong instead of failing the read that found it.
type RawEvent struct {
	ID            string
	AggregateType string
	AggregateID   string
	AggregateSeq  uint64
	EventType     string
	SchemaVersion int64
	Payload       []byte
	// Headers is the stored JSON text; nil when the column is NULL.
	Headers []byte
	// Fields is the stored JSON text of the fields a foreign table's copy
	// brought (docs/design.md, section 10); nil when the column is NULL.
	Fields []byte
}

// RowDefect is why a stored row cannot be published as it is: a column
// herald cannot decode, or a value outbox.Writer refuses (docs/contracts.md,
// section 8). It is the event's own fault: the relay quarantines the event
// at once with class encode, without producing it, and its successors wait
// behind it as the order policy says (docs/design.md, section 6).
type RowDefect struct {
	// Column is the outbox_events column at fault.
	Column string `json:"column"`
	// Problem says what is wrong with it.
	Problem string `json:"problem"`
	// Stored is the column's stored value, cut to RowDefectStoredMaxLen
	// bytes; StoredBytes is its whole length. Neither is scrubbed of
	// secrets: whoever shows Stored scrubs it.
	Stored      string `json:"stored"`
	StoredBytes int    `json:"stored_bytes"`
}

// Error names the column and the problem, and quotes the start of the
// stored value (escaped: a NUL or invalid UTF-8 stays visible).
func (d *RowDefect) Error() string {
	return fmt.Sprintf("column %s %s; stored: %.*q", d.Column, d.Problem, rowDefectQuotedMaxLen, d.Stored)
}

func newRowDefect(column, problem string, stored []byte) *RowDefect {
	d := &RowDefect{Column: column, Problem: problem, StoredBytes: len(stored)}
	if len(stored) > RowDefectStoredMaxLen {
		stored = stored[:RowDefectStoredMaxLen]
	}
	d.Stored = string(stored)
	return d
}

// Decode returns the event the row holds, with Defect set to the first
// column at fault (in column order) when the row cannot be published as it
// is. It checks what outbox.Writer checks of a value's form (text without
// NUL, JSON, versions), not its limits (lengths, header count, payload
// size: the columns bound the lengths, and the record's size is Kafka's to
// judge). Columns other than RawEvent's are the caller's to fill.
func (r RawEvent) Decode() Event {
	e := Event{
		ID: r.ID, AggregateType: r.AggregateType, AggregateID: r.AggregateID, AggregateSeq: r.AggregateSeq,
		EventType: r.EventType, Payload: r.Payload,
	}
	if r.SchemaVersion >= 0 && r.SchemaVersion <= 1<<16-1 {
		e.SchemaVersion = uint16(r.SchemaVersion)
	}
	e.Defect = r.defect(&e)
	return e
}

// defect checks the columns in order, and sets e.Headers when they decode
// (whatever else is wrong: an operator sees them).
func (r RawEvent) defect(e *Event) *RowDefect {
	var headersProblem string
	if r.Headers != nil {
		e.Headers, headersProblem = decodeHeaders(r.Headers)
	}
	if !envelope.IsUUID(r.ID) {
		// The record's event_id: consumers dead-letter anything else.
		return newRowDefect("id", "is not a UUID in its 36-character form", []byte(r.ID))
	}
	for _, c := range []struct{ column, value string }{
		{"aggregate_type", r.AggregateType},
		{"aggregate_id", r.AggregateID},
	} {
		if p := textProblem(c.value, true); p != "" {
			return newRowDefect(c.column, p, []byte(c.value))
		}
	}
	if r.AggregateSeq < 1 {
		return newRowDefect("aggregate_seq", "must be 1 or more", fmt.Appendf(nil, "%d", r.AggregateSeq))
	}
	if p := textProblem(r.EventType, true); p != "" {
		return newRowDefect("event_type", p, []byte(r.EventType))
	}
	if r.SchemaVersion < 1 || r.SchemaVersion > 1<<16-1 {
		return newRowDefect("schema_version", "must be 1 to 65535", fmt.Appendf(nil, "%d", r.SchemaVersion))
	}
	switch {
	case !utf8.Valid(r.Payload):
		return newRowDefect("payload", "is not valid UTF-8", r.Payload)
	case !json.Valid(r.Payload):
		return newRowDefect("payload", "is not a valid JSON document", r.Payload)
	}
	if headersProblem != "" {
		return newRowDefect("headers", headersProblem, r.Headers)
	}
	if r.Fields != nil {
		var problem string
		if e.Fields, problem = decodeFields(r.Fields); problem != "" {
			return newRowDefect("fields", problem, r.Fields)
		}
	}
	return nil
}

// decodeFields reads a fields column: a JSON object (JSON null: none).
func decodeFields(stored []byte) (map[string]json.RawMessage, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(stored, &fields); err != nil {
		if !json.Valid(stored) {
			return nil, "is not valid JSON: " + err.Error()
		}
		return nil, "is not a JSON object but " + jsonKind(stored)
	}
	return fields, ""
}

// decodeHeaders reads a headers column: a JSON object of string values
// (JSON null: none), names not blank, names and values text without NUL.
// It returns what is wrong, or "".
func decodeHeaders(stored []byte) (map[string]string, string) {
	if !utf8.Valid(stored) {
		return nil, "is not valid UTF-8"
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(stored, &raw); err != nil {
		if !json.Valid(stored) {
			return nil, "is not valid JSON: " + err.Error()
		}
		return nil, "is not a JSON object of strings but " + jsonKind(stored)
	}
	if raw == nil {
		return nil, "" // JSON null: no headers
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad header is the same on every read
	headers := make(map[string]string, len(raw))
	for _, name := range names {
		if p := textProblem(name, true); p != "" {
			return nil, fmt.Sprintf("has a header name %q that %s", name, p)
		}
		var v string
		if kind := jsonKind(raw[name]); kind != "a JSON string" || json.Unmarshal(raw[name], &v) != nil {
			// null too: Unmarshal would read it as "" without a word.
			return nil, fmt.Sprintf("has header %q whose value is %s, not a string", name, kind)
		}
		if p := textProblem(v, false); p != "" {
			return nil, fmt.Sprintf("has header %q whose value %s", name, p)
		}
		headers[name] = v
	}
	return headers, ""
}

// textProblem says what outbox.Writer would refuse in a text field, or "".
func textProblem(s string, required bool) string {
	switch {
	case required && strings.TrimSpace(s) == "":
		return "is empty"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(v []byte) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}
