package inbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
)

// Format names the shape of the records a Consumer reads: where a record's
// event id, type and data are. The relay publishes the same three formats
// (docs/consumers.md, "Records in other formats").
type Format string

const (
	// FormatHerald is herald's own record: the value is herald's JSON
	// envelope (event_id, type, version, occurred_at, data), decoded by
	// Config.Registry. The default.
	FormatHerald Format = "herald"
	// FormatDebezium is what Debezium's Outbox Event Router emits: the
	// event id in the record header "id", the value the event's payload
	// as Debezium wrote it.
	FormatDebezium Format = "debezium"
	// FormatCloudEvents is the CloudEvents 1.0 Kafka protocol binding, in
	// binary content mode (attributes in ce_* headers, the value the data)
	// or structured content mode (content-type
	// application/cloudevents+json, the value the whole JSON event).
	FormatCloudEvents Format = "cloudevents"
)

// Formats lists every format, the default first.
var Formats = []Format{FormatHerald, FormatDebezium, FormatCloudEvents}

// Record headers the non-herald formats are read from.
const (
	// HeaderDebeziumID is the header in which Debezium's Outbox Event
	// Router puts the event id (the outbox row's id column).
	HeaderDebeziumID = "id"
	// HeaderCloudEventsID, HeaderCloudEventsType, HeaderCloudEventsTime and
	// HeaderCloudEventsSpecVersion carry the CloudEvents attributes of a
	// binary-mode record.
	HeaderCloudEventsID          = "ce_id"
	HeaderCloudEventsType        = "ce_type"
	HeaderCloudEventsTime        = "ce_time"
	HeaderCloudEventsSpecVersion = "ce_specversion"
	// HeaderCloudEventsSchemaVersion carries herald's schemaversion
	// extension attribute, the event's schema version (docs/contracts.md,
	// section 9): Message.Version.
	HeaderCloudEventsSchemaVersion = "ce_schemaversion"
	// HeaderContentType is the Kafka binding's content-type header; the
	// value ContentTypeCloudEventsJSON marks a structured-mode record.
	HeaderContentType = "content-type"
	// ContentTypeCloudEventsJSON is the media type of a structured-mode
	// CloudEvent in JSON.
	ContentTypeCloudEventsJSON = "application/cloudevents+json"
)

// cloudEventsSpecVersion is the only CloudEvents version read: 0.3 named
// and encoded some attributes differently.
const cloudEventsSpecVersion = "1.0"

// decodeError is a record of a non-herald format that cannot be applied.
// It matches envelope.ErrMissingID or envelope.ErrMalformed with errors.Is,
// so envelope.ErrorClass gives its dead-letter class as it does for a
// herald envelope.
type decodeError struct {
	format  Format
	eventID string // as far as it could be read, for logs and dead letters
	err     error  // envelope.ErrMissingID or envelope.ErrMalformed
	reason  string
}

func (e *decodeError) Error() string {
	msg := "decode " + string(e.format) + " record"
	if e.eventID != "" {
		msg += " " + e.eventID
	}
	if errors.Is(e.err, envelope.ErrMissingID) {
		return msg + ": no event id: " + e.reason
	}
	return msg + ": malformed: " + e.reason
}

func (e *decodeError) Unwrap() error { return e.err }

func missingID(f Format, reason string, args ...any) error {
	return &decodeError{format: f, err: envelope.ErrMissingID, reason: fmt.Sprintf(reason, args...)}
}

func malformed(f Format, eventID, reason string, args ...any) error {
	if len(eventID) > 64 {
		eventID = eventID[:64]
	}
	return &decodeError{format: f, eventID: eventID, err: envelope.ErrMalformed, reason: fmt.Sprintf(reason, args...)}
}

// checkID refuses an event id the inbox cannot key on: consumed_events
// holds a UUID (CHAR(36), or uuid on PostgreSQL), as for herald's envelope.
func checkID(f Format, where, id string) error {
	if id == "" {
		return missingID(f, "%s is missing or empty", where)
	}
	if !envelope.IsUUID(id) {
		return malformed(f, id, "%s %.40q is not a UUID", where, id)
	}
	return nil
}

// lastHeader returns the value of the last header named key, as
// Message.Headers keeps it, and whether there is one.
func lastHeader(rec *kgo.Record, key string) (string, bool) {
	for i := len(rec.Headers) - 1; i >= 0; i-- {
		if rec.Headers[i].Key == key {
			return string(rec.Headers[i].Value), true
		}
	}
	return "", false
}

// decodeDebezium reads a record of Debezium's Outbox Event Router: the id
// header, the type from typeHeader if set, and the value as it is (JSON
// text with the StringConverter; with the JsonConverter a string payload
// is a JSON string literal, an expanded one an object).
func decodeDebezium(rec *kgo.Record, typeHeader string) (envelope.Envelope, error) {
	id, _ := lastHeader(rec, HeaderDebeziumID)
	if err := checkID(FormatDebezium, "header "+HeaderDebeziumID, id); err != nil {
		return envelope.Envelope{}, err
	}
	e := envelope.Envelope{EventID: id, Data: rec.Value}
	if typeHeader != "" {
		e.Type, _ = lastHeader(rec, typeHeader)
	}
	return e, nil
}

// decodeCloudEvents reads a CloudEvents record in either content mode.
func decodeCloudEvents(rec *kgo.Record) (envelope.Envelope, error) {
	if ct, ok := lastHeader(rec, HeaderContentType); ok {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			mt = strings.ToLower(strings.TrimSpace(ct))
		}
		switch {
		case mt == ContentTypeCloudEventsJSON:
			return decodeStructured(rec.Value)
		case strings.HasPrefix(mt, "application/cloudevents"):
			// Batches and other event formats (Avro, Protobuf) would each
			// need a reader of their own.
			id, _ := lastHeader(rec, HeaderCloudEventsID)
			return envelope.Envelope{}, malformed(FormatCloudEvents, id, "content type %.80q: of the structured modes only %s is read", ct, ContentTypeCloudEventsJSON)
		}
	}
	return decodeBinary(rec)
}

// decodeBinary reads a binary-mode record: attributes in ce_* headers.
func decodeBinary(rec *kgo.Record) (envelope.Envelope, error) {
	id, _ := lastHeader(rec, HeaderCloudEventsID)
	if err := checkID(FormatCloudEvents, "header "+HeaderCloudEventsID, id); err != nil {
		return envelope.Envelope{}, err
	}
	if v, ok := lastHeader(rec, HeaderCloudEventsSpecVersion); ok && v != cloudEventsSpecVersion {
		return envelope.Envelope{}, malformed(FormatCloudEvents, id, "header %s %.20q: only %s is read", HeaderCloudEventsSpecVersion, v, cloudEventsSpecVersion)
	}
	e := envelope.Envelope{EventID: id, Data: rec.Value}
	e.Type, _ = lastHeader(rec, HeaderCloudEventsType)
	if s, ok := lastHeader(rec, HeaderCloudEventsSchemaVersion); ok {
		v, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return envelope.Envelope{}, malformed(FormatCloudEvents, id, "header %s %.20q is not a schema version (0 to 65535)", HeaderCloudEventsSchemaVersion, s)
		}
		e.Version = uint16(v)
	}
	if s, ok := lastHeader(rec, HeaderCloudEventsTime); ok && s != "" {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return envelope.Envelope{}, malformed(FormatCloudEvents, id, "header %s %.40q is not an RFC 3339 time", HeaderCloudEventsTime, s)
		}
		e.OccurredAt = at
	}
	return e, nil
}

// structuredEvent is the part of a JSON CloudEvent the inbox reads.
type structuredEvent struct {
	SpecVersion string `json:"specversion"`
	ID          string `json:"id"`
	Type        string `json:"type"`
	Time        string `json:"time"`
	// SchemaVersion is herald's schemaversion extension: a JSON number,
	// or a string as other writers may give an extension.
	SchemaVersion json.RawMessage `json:"schemaversion"`
	Data          json.RawMessage `json:"data"`
	DataBase64    *string         `json:"data_base64"`
}

// decodeStructured reads a structured-mode value: one JSON CloudEvent.
func decodeStructured(value []byte) (envelope.Envelope, error) {
	var ev structuredEvent
	if err := json.Unmarshal(value, &ev); err != nil {
		return envelope.Envelope{}, malformed(FormatCloudEvents, "", "value is not a JSON CloudEvent: %v", err)
	}
	if !bytes.HasPrefix(bytes.TrimLeft(value, " \t\r\n"), []byte("{")) {
		// null decodes into an empty event without an error.
		return envelope.Envelope{}, malformed(FormatCloudEvents, "", "value is not a JSON object")
	}
	if err := checkID(FormatCloudEvents, "attribute id", ev.ID); err != nil {
		return envelope.Envelope{}, err
	}
	if ev.SpecVersion != "" && ev.SpecVersion != cloudEventsSpecVersion {
		return envelope.Envelope{}, malformed(FormatCloudEvents, ev.ID, "specversion %.20q: only %s is read", ev.SpecVersion, cloudEventsSpecVersion)
	}
	e := envelope.Envelope{EventID: ev.ID, Type: ev.Type, Data: ev.Data}
	if len(ev.SchemaVersion) > 0 && string(ev.SchemaVersion) != "null" {
		v, err := strconv.ParseUint(strings.Trim(string(ev.SchemaVersion), `"`), 10, 16)
		if err != nil {
			return envelope.Envelope{}, malformed(FormatCloudEvents, ev.ID, "schemaversion %.20s is not a schema version (0 to 65535)", ev.SchemaVersion)
		}
		e.Version = uint16(v)
	}
	if ev.Time != "" {
		at, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			return envelope.Envelope{}, malformed(FormatCloudEvents, ev.ID, "time %.40q is not an RFC 3339 time", ev.Time)
		}
		e.OccurredAt = at
	}
	if ev.DataBase64 != nil {
		if len(ev.Data) > 0 {
			return envelope.Envelope{}, malformed(FormatCloudEvents, ev.ID, "both data and data_base64 are set")
		}
		data, err := base64.StdEncoding.DecodeString(*ev.DataBase64)
		if err != nil {
			return envelope.Envelope{}, malformed(FormatCloudEvents, ev.ID, "data_base64 is not base64: %v", err)
		}
		e.Data = data
	}
	return e, nil
}
