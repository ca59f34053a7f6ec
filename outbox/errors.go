package outbox

import (
	"errors"
	"fmt"
)

// Reasons an event is refused. A *ValidationError wraps one of them, so
// callers branch with errors.Is and report ValidationError.Field.
var (
	// ErrNoEvents: Add was called without events.
	ErrNoEvents = errors.New("no events to add")
	// ErrRequired: a required field is empty.
	ErrRequired = errors.New("is required")
	// ErrTooLong: a field exceeds its column's length.
	ErrTooLong = errors.New("is too long")
	// ErrNotUTF8: a field is not valid UTF-8.
	ErrNotUTF8 = errors.New("is not valid UTF-8")
	// ErrNUL: a text field holds a NUL character (U+0000), which
	// PostgreSQL's text and jsonb cannot store: refused on every database
	// alike (docs/contracts.md, section 2).
	ErrNUL = errors.New("contains a NUL character")
	// ErrReservedHeader: a header name is in herald's reserved prefix
	// (envelope.HeaderPrefix, "herald-", in any case); herald sets those
	// headers itself.
	ErrReservedHeader = errors.New("is reserved for herald's own headers")
	// ErrSchemaVersion: SchemaVersion is 0.
	ErrSchemaVersion = errors.New("must be 1 or more (0 is not a schema version)")
	// ErrPayloadNotJSON: Payload is not a valid JSON document.
	ErrPayloadNotJSON = errors.New("is not valid JSON")
	// ErrPayloadTooLarge: Payload exceeds Config.MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("exceeds the maximum payload size")
	// ErrTooManyHeaders: more than HeaderMaxCount headers.
	ErrTooManyHeaders = errors.New("has too many headers")
)

// ValidationError says which event and which field were refused, and why.
type ValidationError struct {
	// Index is the event's position in the Add call.
	Index int
	// Field is the Event field (or "Headers[name]") that was refused.
	Field string
	// Err is one of the Err* reasons of this package.
	Err error
	// Detail adds numbers, e.g. "130 > 128 characters".
	Detail string
}

func (e *ValidationError) Error() string {
	msg := fmt.Sprintf("outbox: event %d: %s %v", e.Index, e.Field, e.Err)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *ValidationError) Unwrap() error { return e.Err }
