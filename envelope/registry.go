package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Errors of Decode, besides Parse's. A *DecodeError wraps one of them.
var (
	// ErrUnknownType: no decoder is registered for the envelope's type.
	ErrUnknownType = errors.New("unknown event type")
	// ErrUnsupportedVersion: the type is known, but not at this version.
	ErrUnsupportedVersion = errors.New("unsupported event version")
)

// Error classes, as ErrorClass returns them. Dead-letter records carry them
// in a header, and metrics label by them.
const (
	// ClassMalformed: not JSON, not an envelope, or data that does not fit
	// the registered type (including a missing type or version).
	ClassMalformed = "malformed"
	// ClassMissingID: no event_id, so the event cannot be deduplicated.
	ClassMissingID = "missing_id"
	// ClassUnknownType: no decoder for the type.
	ClassUnknownType = "unknown_type"
	// ClassUnsupportedVersion: the type is known, the version is not.
	ClassUnsupportedVersion = "unsupported_version"
)

// ErrorClass returns the class (Class*) of an error of Parse or Decode, or ""
// when err is none of them.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrMissingID):
		return ClassMissingID
	case errors.Is(err, ErrUnknownType):
		return ClassUnknownType
	case errors.Is(err, ErrUnsupportedVersion):
		return ClassUnsupportedVersion
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrMissingType), errors.Is(err, ErrMissingVersion):
		return ClassMalformed
	}
	return ""
}

// DecodeError says which record could not be decoded and why. It matches
// its Err with errors.Is (ErrMalformed, ErrMissingID, ErrMissingType,
// ErrMissingVersion, ErrUnknownType or ErrUnsupportedVersion) and its Cause
// with errors.As.
type DecodeError struct {
	// EventID, Type and Version are what the envelope said, as far as it
	// could be read.
	EventID string
	Type    string
	Version uint16
	// Err is one of the package's sentinel errors.
	Err error
	// Cause is the underlying error (a JSON error, or the payload's
	// validation error), if any.
	Cause error
}

func (e *DecodeError) Error() string {
	msg := "decode event"
	if e.EventID != "" {
		msg += " " + e.EventID
	}
	switch {
	case e.Type != "" && e.Version > 0:
		msg += fmt.Sprintf(" (%s v%d)", e.Type, e.Version)
	case e.Type != "":
		msg += " (" + e.Type + ")"
	}
	msg += ": " + e.Err.Error()
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns Err and Cause, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// Class returns the error's class (Class*).
func (e *DecodeError) Class() string { return ErrorClass(e.Err) }

// Event is an envelope whose data was decoded by the decoder registered for
// its type and version.
type Event struct {
	Envelope
	// Payload is Data decoded: for a type registered with Register[T], a T.
	Payload any
}

// DecodeFunc turns the data of one (type, version) into a Go value. It must
// ignore fields it does not know.
type DecodeFunc func(data json.RawMessage) (any, error)

// Validator is implemented by payload types that check their own fields
// after decoding (for example, that an amount is a decimal string).
type Validator interface {
	Validate() error
}

type typeVersion struct {
	typ     string
	version uint16
}

// Registry dispatches decoding on an envelope's (type, version). Register
// decoders at start-up; Decode is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	decoders map[typeVersion]DecodeFunc
	versions map[string][]uint16
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{decoders: map[typeVersion]DecodeFunc{}, versions: map[string][]uint16{}}
}

// Register adds the decoder of (typ, version). It panics when typ is empty,
// version is 0, decode is nil or the pair is already registered: those are
// programming errors found at start-up.
func (r *Registry) Register(typ string, version uint16, decode DecodeFunc) {
	if typ == "" || version == 0 || decode == nil {
		panic(fmt.Sprintf("envelope: Register(%q, %d): type, version and decoder are required", typ, version))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := typeVersion{typ, version}
	if _, dup := r.decoders[key]; dup {
		panic(fmt.Sprintf("envelope: %s v%d registered twice", typ, version))
	}
	r.decoders[key] = decode
	r.versions[typ] = append(r.versions[typ], version)
	slices.Sort(r.versions[typ])
}

// Register adds a decoder of (typ, version) that unmarshals data into a T,
// ignoring unknown fields, and then runs T's Validate method if it has one.
// Event.Payload is then a T.
func Register[T any](r *Registry, typ string, version uint16) {
	r.Register(typ, version, func(data json.RawMessage) (any, error) {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		if val, ok := any(&v).(Validator); ok {
			if err := val.Validate(); err != nil {
				return nil, err
			}
		}
		return v, nil
	})
}

// Types returns every registered type with its versions, sorted.
func (r *Registry) Types() map[string][]uint16 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make(map[string][]uint16, len(r.versions))
	for t, vs := range r.versions {
		out[t] = slices.Clone(vs)
	}
	return out
}

// Decode parses b (see Parse) and decodes its data with the decoder
// registered for its (type, version). Every error is a *DecodeError.
func (r *Registry) Decode(b []byte) (Event, error) {
	e, err := Parse(b)
	if err != nil {
		de := &DecodeError{Err: err}
		// Name what could be read, for logs and dead letters. A field of
		// the wrong type is skipped; the others are still read.
		var partial struct {
			EventID string `json:"event_id"`
			Type    string `json:"type"`
			Version uint16 `json:"version"`
		}
		var wrongType *json.UnmarshalTypeError
		if err := json.Unmarshal(b, &partial); err == nil || errors.As(err, &wrongType) {
			de.EventID, de.Type, de.Version = partial.EventID, partial.Type, partial.Version
		}
		if len(de.EventID) > 64 {
			de.EventID = de.EventID[:64]
		}
		var malformed malformedError
		if errors.As(err, &malformed) {
			de.Err, de.Cause = ErrMalformed, malformed.reason
		}
		return Event{}, de
	}
	return r.DecodeEnvelope(e)
}

// DecodeEnvelope decodes the data of an envelope Parse already accepted.
// Every error is a *DecodeError.
func (r *Registry) DecodeEnvelope(e Envelope) (Event, error) {
	r.mu.RLock()
	decode, ok := r.decoders[typeVersion{e.Type, e.Version}]
	known := slices.Clone(r.versions[e.Type])
	r.mu.RUnlock()
	de := &DecodeError{EventID: e.EventID, Type: e.Type, Version: e.Version}
	if !ok {
		if len(known) == 0 {
			de.Err = ErrUnknownType
		} else {
			de.Err = ErrUnsupportedVersion
			de.Cause = fmt.Errorf("this consumer knows versions %v", known)
		}
		return Event{}, de
	}
	payload, err := decode(e.Data)
	if err != nil {
		de.Err, de.Cause = ErrMalformed, err
		return Event{}, de
	}
	return Event{Envelope: e, Payload: payload}, nil
}

// PayloadAs returns ev's payload as a T, and whether it is one.
func PayloadAs[T any](ev Event) (T, bool) {
	v, ok := ev.Payload.(T)
	return v, ok
}
