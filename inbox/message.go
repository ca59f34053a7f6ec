package inbox

import (
	"context"
	"database/sql"

	"github.com/herald-outbox/herald/envelope"
)

// Message is one decoded record, as the handler sees it.
type Message struct {
	// Event is the decoded record. With FormatHerald it is the envelope,
	// and Event.Payload the type registered for (Type, Version). With
	// FormatDebezium and FormatCloudEvents it is what the record says:
	// EventID, Type (empty when the record names none), OccurredAt
	// (CloudEvents' time, else zero) and Data, the event's data as raw
	// bytes (Debezium's value as is: with Kafka Connect's JsonConverter a
	// payload written as text is a JSON string literal, which the handler
	// unquotes); Version is the schemaversion attribute with
	// FormatCloudEvents (0 without one) and 0 with FormatDebezium; Payload
	// is nil.
	envelope.Event
	// Topic, Partition and Offset locate the record.
	Topic     string
	Partition int32
	Offset    int64
	// Key is the record's key: the aggregate id (with Kafka Connect's
	// JsonConverter, as a JSON string literal).
	Key []byte
	// Headers are the record's headers (the last value of a repeated key).
	Headers map[string]string
	// Attempt is the handler's attempt on this record, from 1.
	Attempt int
}

// Handler applies one event. It runs inside tx, the transaction that also
// records the event id in consumed_events, and must do all its database
// work through tx: both commit together or not at all. It is never called
// for an event the inbox already holds. It must make no remote call (write a
// row that a dispatcher acts on after the commit instead). An error rolls
// the transaction back; the record is retried (see Config.MaxAttempts), or
// dead-lettered at once if the error is Permanent.
type Handler interface {
	Handle(ctx context.Context, tx *sql.Tx, msg Message) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, tx *sql.Tx, msg Message) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, tx *sql.Tx, msg Message) error {
	return f(ctx, tx, msg)
}
