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
	// Dialect is the database's dialect, as mysql.Dialect{}: it reserves
	// sequence numbers and inserts the rows. Required.
	Dialect store.WriterDialect
	// MaxPayloadBytes is the largest Payload accepted. Defaults to 1 MiB.
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
// of that aggregate already committed: Add locks the aggregate's counter row
// until tx ends, so concurrent writers of one aggregate take turns and the
// relay publishes in commit order. Add makes no remote call besides the
// database.
//
// An invalid event is reported as a *ValidationError before anything is
// written.
func (w *Writer) Add(ctx context.Context, tx *sql.Tx, events ...Event) ([]string, error) {
	if len(events) == 0 {
		return nil, ErrNoEvents
	}
	rows := make([]store.NewEvent, len(events))
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
		rows[i] = store.NewEvent{
			ID: id.String(), Key: store.SeqKey{AggregateType: e.AggregateType, AggregateID: e.AggregateID},
			EventType: e.EventType, SchemaVersion: e.SchemaVersion, Payload: e.Payload, Headers: headersJSON,
			OccurredAt: occurred.UTC().Truncate(time.Microsecond),
		}
	}
	if err := w.assignSequences(ctx, tx, rows); err != nil {
		return nil, err
	}
	if err := w.cfg.Dialect.InsertEvents(ctx, tx, rows); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// assignSequences reserves aggregate_seq numbers for rows. Counter rows are
// locked in (aggregate_type, aggregate_id) order, so two transactions that
// touch the same aggregates cannot deadlock on them.
func (w *Writer) assignSequences(ctx context.Context, tx *sql.Tx, rows []store.NewEvent) error {
	type aggregate struct{ typ, id string }
	counts := map[aggregate]uint64{}
	for _, r := range rows {
		counts[aggregate{r.Key.AggregateType, r.Key.AggregateID}]++
	}
	keys := make([]aggregate, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b aggregate) int {
		return cmp.Or(strings.Compare(a.typ, b.typ), strings.Compare(a.id, b.id))
	})
	next := make(map[aggregate]uint64, len(keys))
	for _, k := range keys {
		first, err := w.cfg.Dialect.ReserveSequences(ctx, tx, k.typ, k.id, counts[k])
		if err != nil {
			return fmt.Errorf("outbox: reserve sequence for %s/%s: %w", k.typ, k.id, err)
		}
		next[k] = first
	}
	for i := range rows {
		k := aggregate{rows[i].Key.AggregateType, rows[i].Key.AggregateID}
		rows[i].Key.Seq = next[k]
		next[k]++
	}
	return nil
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
