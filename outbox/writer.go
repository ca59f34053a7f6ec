package outbox

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// MaxPayloadBytesDefault is Config.MaxPayloadBytes's default: 1 MiB. The
// relays' default record limit (kafka.MaxRecordBytesDefault, also the
// max.message.bytes `herald topics create` sets) has room for such a
// payload with its envelope, key and headers; a larger limit here needs
// both raised to match.
const MaxPayloadBytesDefault = 1 << 20

// Config shapes a Writer. Dialect is required; other zero fields take their
// defaults.
type Config struct {
	// Dialect is the database's dialect, as mysql.Dialect{} or
	// postgres.Dialect{}: it inserts the rows. Required.
	Dialect store.WriterDialect
	// MaxPayloadBytes is the largest Payload accepted. The table's trigger
	// refuses payloads over 1 MiB from every writer (docs/writers.md,
	// "Limits"), so a larger value needs the trigger's limit raised too.
	// Defaults to 1 MiB.
	MaxPayloadBytes int
	// Now returns the time used for events without OccurredAt. Defaults to
	// time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxPayloadBytes == 0 {
		c.MaxPayloadBytes = MaxPayloadBytesDefault
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ConfigError is one invalid Config field (the same type as every herald
// package's ConfigError).
type ConfigError = config.Error

// validate reports every invalid field at once, each as a *ConfigError.
func (c Config) validate() error {
	var errs config.Errors
	if c.Dialect == nil {
		errs.Add("Dialect", "is required (mysql.Dialect{} for MySQL/MariaDB)")
	}
	if c.MaxPayloadBytes < 0 {
		errs.Add("MaxPayloadBytes", "must not be negative, got %d", c.MaxPayloadBytes)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("outbox config: %w", err)
	}
	return nil
}

// Writer adds events to the caller's transactions. It is safe for concurrent
// use.
type Writer struct {
	cfg Config
}

// NewWriter returns a Writer with cfg; zero fields take their defaults.
func NewWriter(cfg Config) (*Writer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Writer{cfg: cfg.withDefaults()}, nil
}

// Add validates events and inserts them into outbox_events inside tx. They
// become visible to the relay only if the caller commits tx; a rollback
// leaves nothing behind. It returns each event's id (a time-ordered UUIDv7),
// in the order given.
//
// Events of one aggregate are numbered in the order given, after every event
// of that aggregate already committed: the table's trigger locks the
// aggregate's counter row until tx ends, so concurrent writers of one
// aggregate take turns and the relay publishes in commit order. Add makes no
// remote call besides the database.
//
// An invalid event is reported as a *ValidationError before anything is
// written.
func (w *Writer) Add(ctx context.Context, tx *sql.Tx, events ...Event) ([]string, error) {
	if len(events) == 0 {
		return nil, ErrNoEvents
	}
	rows := make([]store.NewEvent, len(events))
	ids := make([]string, len(events))
	now := w.cfg.Now().UTC().Truncate(time.Microsecond)
	traceparent, hasTrace := TraceparentFromContext(ctx)
	for i, e := range events {
		if err := w.validate(i, e); err != nil {
			return nil, err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("outbox: generate event id: %w", err)
		}
		headers := e.Headers
		if hasTrace {
			if _, set := headers[TraceparentHeader]; !set {
				headers = cloneWith(headers, TraceparentHeader, traceparent)
			}
		}
		var headersJSON []byte
		if len(headers) > 0 {
			if headersJSON, err = json.Marshal(headers); err != nil {
				return nil, fmt.Errorf("outbox: event %d: encode headers: %w", i, err)
			}
		}
		occurred := e.OccurredAt
		if occurred.IsZero() {
			occurred = now
		}
		ids[i] = id.String()
		rows[i] = store.NewEvent{
			ID: ids[i], AggregateType: e.AggregateType, AggregateID: e.AggregateID,
			EventType: e.EventType, SchemaVersion: e.SchemaVersion, Payload: e.Payload, Headers: headersJSON,
			OccurredAt: occurred.UTC().Truncate(time.Microsecond),
		}
	}
	// W1 without deadlocks: the trigger locks each aggregate's counter as
	// it inserts that aggregate's first row, so rows go in in
	// (aggregate_type, aggregate_id) order, and two transactions that
	// touch the same aggregates lock them in the same order. The sort is
	// stable: an aggregate's events keep the order given, which is the
	// order the trigger numbers them in.
	slices.SortStableFunc(rows, func(a, b store.NewEvent) int {
		return cmp.Or(strings.Compare(a.AggregateType, b.AggregateType), strings.Compare(a.AggregateID, b.AggregateID))
	})
	if err := w.cfg.Dialect.InsertEvents(ctx, tx, rows); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return ids, nil
}

func (w *Writer) validate(i int, e Event) error {
	fail := func(field string, err error, detail string) error {
		return &ValidationError{Index: i, Field: field, Err: err, Detail: detail}
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"AggregateType", e.AggregateType, AggregateTypeMaxLen},
		{"AggregateID", e.AggregateID, AggregateIDMaxLen},
		{"EventType", e.EventType, EventTypeMaxLen},
	} {
		if err := checkText(f.value, f.max, true); err != nil {
			return fail(f.name, err, lengthDetail(f.value, f.max, err))
		}
	}
	if e.SchemaVersion == 0 {
		return fail("SchemaVersion", ErrSchemaVersion, "")
	}
	if len(e.Payload) == 0 {
		return fail("Payload", ErrRequired, "")
	}
	if len(e.Payload) > w.cfg.MaxPayloadBytes {
		return fail("Payload", ErrPayloadTooLarge, fmt.Sprintf("%d > %d bytes", len(e.Payload), w.cfg.MaxPayloadBytes))
	}
	if !json.Valid(e.Payload) {
		return fail("Payload", ErrPayloadNotJSON, "")
	}
	if !utf8.Valid(e.Payload) {
		// json.Valid lets invalid UTF-8 inside strings through; both
		// databases' JSON columns refuse it.
		return fail("Payload", ErrNotUTF8, "")
	}
	if len(e.Headers) > HeaderMaxCount {
		return fail("Headers", ErrTooManyHeaders, fmt.Sprintf("%d > %d", len(e.Headers), HeaderMaxCount))
	}
	for name, value := range e.Headers {
		if err := checkText(name, HeaderNameMaxLen, true); err != nil {
			return fail("Headers["+name+"] name", err, lengthDetail(name, HeaderNameMaxLen, err))
		}
		if envelope.IsReservedHeader(name) {
			return fail("Headers["+name+"] name", ErrReservedHeader, "")
		}
		if err := checkText(value, HeaderValueMaxLen, false); err != nil {
			return fail("Headers["+name+"]", err, lengthDetail(value, HeaderValueMaxLen, err))
		}
	}
	return nil
}

func checkText(s string, maxLen int, required bool) error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return ErrRequired
	case !utf8.ValidString(s):
		return ErrNotUTF8
	case strings.IndexByte(s, 0) >= 0:
		return ErrNUL
	case utf8.RuneCountInString(s) > maxLen:
		return ErrTooLong
	}
	return nil
}

func lengthDetail(s string, maxLen int, err error) string {
	if !errors.Is(err, ErrTooLong) {
		return ""
	}
	return fmt.Sprintf("%d > %d characters", utf8.RuneCountInString(s), maxLen)
}

func cloneWith(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}
