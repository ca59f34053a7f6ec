package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HeaderPrefix begins the name of every Kafka record header herald sets
// itself (the Header* names below, the dead-letter and replay headers). An
// event's own headers never use it: the writer refuses such a name, and the
// relay drops a stored one (docs/contracts.md, section 2), so a consumer
// never reads two values of one herald header.
const HeaderPrefix = "herald-"

// Kafka record headers herald sets on every published event, besides the
// event's own headers (such as traceparent).
const (
	HeaderEventID       = HeaderPrefix + "event-id"
	HeaderEventType     = HeaderPrefix + "event-type"
	HeaderEventVersion  = HeaderPrefix + "event-version"
	HeaderAggregateType = HeaderPrefix + "aggregate-type"
	HeaderAggregateSeq  = HeaderPrefix + "aggregate-seq"
)

// IsReservedHeader reports whether name is in herald's reserved prefix,
// in any letter case: header names are bytes to Kafka, but a consumer that
// looks them up without regard to case must not meet a second
// "Herald-Event-Id" either.
func IsReservedHeader(name string) bool {
	return len(name) >= len(HeaderPrefix) && strings.EqualFold(name[:len(HeaderPrefix)], HeaderPrefix)
}

// Envelope is the wire contract of one event: the JSON value of a Kafka
// record. Fields are only ever added, never removed or renamed.
type Envelope struct {
	// EventID is the event's unique id (a UUID); consumers deduplicate on it.
	EventID string `json:"event_id"`
	// Type says what happened, e.g. "order.created".
	Type string `json:"type"`
	// Version is the version of Data's shape for Type.
	Version uint16 `json:"version"`
	// OccurredAt is when the event happened (RFC 3339 with fractional
	// seconds).
	OccurredAt time.Time `json:"occurred_at"`
	// Data is the event's payload, as the producer wrote it.
	Data json.RawMessage `json:"data"`
}

// Errors of Parse. Decoding errors wrap one of them.
var (
	// ErrMalformed: the bytes are not a JSON object of the envelope's shape.
	ErrMalformed = errors.New("malformed envelope")
	// ErrMissingID: event_id is absent or empty.
	ErrMissingID = errors.New("envelope has no event_id")
	// ErrMissingType: type is absent or empty.
	ErrMissingType = errors.New("envelope has no type")
	// ErrMissingVersion: version is absent or 0.
	ErrMissingVersion = errors.New("envelope has no version")
)

// Encode returns e's JSON form. Data must be valid JSON.
//
// The bytes are those of encoding/json with HTML escaping off (Data is
// copied as written, less insignificant whitespace, so a record stays
// within the payload plus a bounded overhead: escaping turns each <, >, &,
// U+2028 and U+2029 into six bytes, which could push a payload the writer
// accepted past the producer's and the topic's limits). They are built
// field by field so that Data, most of a record, is read once (compacted
// and validated in one pass) instead of three times; the golden files hold
// the output to encoding/json's.
func Encode(e Envelope) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(e.Data) + len(e.Type) + 128)
	buf.WriteString(`{"event_id":`)
	writeString(&buf, e.EventID)
	buf.WriteString(`,"type":`)
	writeString(&buf, e.Type)
	buf.WriteString(`,"version":`)
	buf.WriteString(strconv.FormatUint(uint64(e.Version), 10))
	buf.WriteString(`,"occurred_at":`)
	at, err := e.OccurredAt.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode envelope %s: %w", e.EventID, err)
	}
	buf.Write(at)
	buf.WriteString(`,"data":`)
	if err := json.Compact(&buf, e.Data); err != nil || len(e.Data) == 0 {
		return nil, fmt.Errorf("encode envelope %s: data is not valid JSON", e.EventID)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// writeString writes s as a JSON string, as encoding/json writes it with
// HTML escaping off.
func writeString(buf *bytes.Buffer, s string) {
	if isPlain(s) {
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes, with a newline after it
	buf.Truncate(buf.Len() - 1)
}

// isPlain says whether s needs no escaping in a JSON string: printable
// ASCII other than the quote and the backslash.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Parse decodes an envelope, ignoring fields it does not know, and checks
// that it names an event id (a UUID in its 36-character form), a type and a
// version.
func Parse(b []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return Envelope{}, malformedError{err}
	}
	switch {
	case !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")):
		// null decodes into an empty Envelope without an error.
		return Envelope{}, malformedError{errors.New("not a JSON object")}
	case e.EventID == "":
		return Envelope{}, ErrMissingID
	case !IsUUID(e.EventID):
		// Consumers key their inbox on the id (CHAR(36)): anything else
		// could not be deduplicated reliably.
		return Envelope{}, malformedError{fmt.Errorf("event_id %.40q is not a UUID", e.EventID)}
	case e.Type == "":
		return Envelope{}, ErrMissingType
	case e.Version == 0:
		return Envelope{}, ErrMissingVersion
	case len(e.Data) == 0:
		return Envelope{}, malformedError{errors.New("no data")}
	}
	return e, nil
}

// malformedError is ErrMalformed with its reason, kept apart so a
// DecodeError can carry the reason as its Cause without repeating the
// sentinel's text.
type malformedError struct{ reason error }

func (e malformedError) Error() string   { return ErrMalformed.Error() + ": " + e.reason.Error() }
func (e malformedError) Unwrap() []error { return []error{ErrMalformed, e.reason} }

// IsUUID reports whether s is a UUID in its canonical 36-character form
// (8-4-4-4-12 hexadecimal digits), in either case: what an event_id must
// be for Parse to accept it.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
