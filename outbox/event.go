package outbox

import (
	"encoding/json"
	"time"
)

// Field limits, in characters, matching the outbox_events columns.
const (
	AggregateTypeMaxLen = 64
	AggregateIDMaxLen   = 128
	EventTypeMaxLen     = 128
	// HeaderMaxCount, HeaderNameMaxLen and HeaderValueMaxLen bound the
	// optional headers of one event.
	HeaderMaxCount    = 32
	HeaderNameMaxLen  = 128
	HeaderValueMaxLen = 1024
)

// Event is one fact to publish. Its text fields (types, ids, header names
// and values) are valid UTF-8 without NUL characters, on every database
// (PostgreSQL cannot store a NUL in text). Payload holds the facts as they were when the
// event happened, so consumers never need to read back a business table.
type Event struct {
	// AggregateType names the kind of entity the event is about ("order").
	// It selects the Kafka topic. Required, at most 64 characters.
	AggregateType string
	// AggregateID identifies the entity ("9182"). It is the Kafka key, so all
	// events of one aggregate land on one partition, in order. Required, at
	// most 128 characters.
	AggregateID string
	// EventType says what happened ("order.created"). Required, at most 128
	// characters.
	EventType string
	// SchemaVersion is the version of Payload's shape for EventType; consumers
	// parse by it. Must be 1 or more.
	SchemaVersion uint16
	// Payload is the event's data as a JSON document. Required; at most
	// Config.MaxPayloadBytes.
	Payload json.RawMessage
	// Headers travel with the event as Kafka record headers. Optional. A
	// name must not begin with "herald-" in any case (envelope.HeaderPrefix:
	// herald sets those headers itself).
	Headers map[string]string
	// OccurredAt is when the event happened. Zero means now.
	OccurredAt time.Time
}
