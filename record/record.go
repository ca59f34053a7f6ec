package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// Format names how an outbox event becomes a Kafka record.
type Format string

const (
	// Herald is herald's own record: the versioned envelope as the value,
	// herald's headers (docs/contracts.md). The default.
	Herald Format = "herald"
	// Debezium is what Debezium's Outbox Event Router emits for the same
	// row with the same settings (DebeziumConfig, docs/from-debezium.md).
	Debezium Format = "debezium"
	// CloudEvents is the CloudEvents Kafka protocol binding, binary or
	// structured content mode (CloudEventsConfig).
	CloudEvents Format = "cloudevents"
)

// Formats lists every format, the default first.
var Formats = []Format{Herald, Debezium, CloudEvents}

// ParseFormat returns the format s names.
func ParseFormat(s string) (Format, error) {
	if slices.Contains(Formats, Format(s)) {
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown record format %q (want %s)", s, formatList())
}

func formatList() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// ErrNoRoute is returned by Encode when no topic is configured for the
// event's aggregate type (herald and cloudevents formats).
var ErrNoRoute = errors.New("no topic is configured for this aggregate type")

// EncodeError is an event that cannot become a record as it is stored:
// the event's own fault, which no retry mends (the relay quarantines it
// with class encode).
type EncodeError struct{ Err error }

func (e *EncodeError) Error() string { return "encode: " + e.Err.Error() }

// Unwrap returns Err.
func (e *EncodeError) Unwrap() error { return e.Err }

// Config says which topic and format each event's record takes.
type Config struct {
	// Topics routes aggregate types to topics, for the herald and
	// cloudevents formats (the debezium format routes as
	// DebeziumConfig.RouteTopicReplacement says).
	Topics map[string]string
	// DefaultTopic receives the aggregate types Topics does not name;
	// empty means their events have no route (ErrNoRoute).
	DefaultTopic string
	// Formats chooses the formats and shapes them.
	Formats FormatConfig
}

// FormatConfig chooses each aggregate type's record format and shapes the
// formats in use.
type FormatConfig struct {
	// Default is the format of every aggregate type ByAggregateType does
	// not name. Defaults to Herald.
	Default Format
	// ByAggregateType gives aggregate types a format of their own.
	ByAggregateType map[string]Format
	// Debezium shapes the debezium format's records.
	Debezium DebeziumConfig
	// CloudEvents shapes the cloudevents format's records.
	CloudEvents CloudEventsConfig
}

func (c FormatConfig) withDefaults() FormatConfig {
	if c.Default == "" {
		c.Default = Herald
	}
	return c
}

// Uses reports whether any aggregate type takes format f.
func (c FormatConfig) Uses(f Format) bool {
	if c.withDefaults().Default == f {
		return true
	}
	for _, g := range c.ByAggregateType {
		if g == f {
			return true
		}
	}
	return false
}

// Timestamped reports whether records carry the event's own time as their
// timestamp (the debezium format with Debezium.Timestamp), which may be
// hours old: their producer must not count its delivery timeout from it
// (kafka.ProducerConfig.RecordTimestamps).
func (c FormatConfig) Timestamped() bool {
	return c.Uses(Debezium) && c.Debezium.Timestamp
}

// Validate reports every invalid field of c at once, each as a
// *config.Error naming it (zero fields take their defaults). The settings
// of a format no aggregate type takes are not checked.
func (c FormatConfig) Validate() error {
	c = c.withDefaults()
	var errs config.Errors
	if _, err := ParseFormat(string(c.Default)); err != nil {
		errs.Add("Default", "%v", err)
	}
	for _, typ := range slices.Sorted(maps.Keys(c.ByAggregateType)) {
		if _, err := ParseFormat(string(c.ByAggregateType[typ])); err != nil {
			errs.Add("ByAggregateType["+typ+"]", "%v", err)
		}
	}
	if c.Uses(Debezium) {
		errs.Nest("Debezium", c.Debezium.validate())
	}
	if c.Uses(CloudEvents) {
		errs.Nest("CloudEvents", c.CloudEvents.validate())
	}
	return errs.Err()
}

// Encoder builds the Kafka record of an event in its aggregate type's
// format. It is safe for concurrent use.
type Encoder struct {
	cfg         Config
	debezium    *debezium
	cloudEvents *cloudEvents
}

// NewEncoder returns an Encoder for cfg, or the validation errors of
// cfg.Formats (fields named "Formats.<field>").
func NewEncoder(cfg Config) (*Encoder, error) {
	var errs config.Errors
	errs.Nest("Formats", cfg.Formats.Validate())
	if err := errs.Err(); err != nil {
		return nil, err
	}
	cfg.Formats = cfg.Formats.withDefaults()
	enc := &Encoder{cfg: cfg}
	var err error
	if cfg.Formats.Uses(Debezium) {
		if enc.debezium, err = newDebezium(cfg.Formats.Debezium); err != nil {
			return nil, err
		}
	}
	if cfg.Formats.Uses(CloudEvents) {
		if enc.cloudEvents, err = newCloudEvents(cfg.Formats.CloudEvents); err != nil {
			return nil, err
		}
	}
	return enc, nil
}

// FormatOf returns the format of aggregateType's records.
func (enc *Encoder) FormatOf(aggregateType string) Format {
	if f, ok := enc.cfg.Formats.ByAggregateType[aggregateType]; ok {
		return f
	}
	return enc.cfg.Formats.Default
}

// Encode returns e's record, its topic set. An error is ErrNoRoute or an
// *EncodeError.
func (enc *Encoder) Encode(e store.Event) (*kgo.Record, error) {
	if e.Defect != nil {
		// A row herald cannot publish as it is (a foreign writer's): the
		// event's own fault, quarantined like any encoding failure.
		return nil, &EncodeError{e.Defect}
	}
	format := enc.FormatOf(e.AggregateType)
	if format == Debezium {
		return enc.debezium.encode(e)
	}
	topic, ok := enc.route(e.AggregateType)
	if !ok {
		return nil, ErrNoRoute
	}
	if format == CloudEvents {
		return enc.cloudEvents.encode(e, topic)
	}
	return encodeHerald(e, topic)
}

// Topic returns the topic of aggregateType's records, as Encode routes
// them: ErrNoRoute when it has none, and an error when the topic depends
// on more than the aggregate type (the debezium format routing by another
// field than aggregate_type).
func (enc *Encoder) Topic(aggregateType string) (string, error) {
	if enc.FormatOf(aggregateType) == Debezium {
		if enc.debezium.cfg.RouteByField != DebeziumRouteByFieldDefault {
			return "", fmt.Errorf("the debezium format routes by field %q: each event's topic depends on it", enc.debezium.cfg.RouteByField)
		}
		return enc.debezium.topic(store.Event{AggregateType: aggregateType})
	}
	topic, ok := enc.route(aggregateType)
	if !ok {
		return "", ErrNoRoute
	}
	return topic, nil
}

// route returns the topic of aggregateType's records in the herald and
// cloudevents formats.
func (enc *Encoder) route(aggregateType string) (string, bool) {
	if t, ok := enc.cfg.Topics[aggregateType]; ok {
		return t, true
	}
	return enc.cfg.DefaultTopic, enc.cfg.DefaultTopic != ""
}

// ReservedHeaders returns the names of e's stored headers that are in
// herald's reserved prefix, sorted: no record carries them
// (docs/contracts.md, section 2).
func ReservedHeaders(e store.Event) []string {
	var names []string
	for k := range e.Headers {
		if envelope.IsReservedHeader(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// storedHeaders returns e's own headers as record headers, less those in
// herald's reserved prefix, sorted by name (a map has no order; a record's
// headers should not change from one publication to the next).
func storedHeaders(e store.Event) []kgo.RecordHeader {
	names := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		if !envelope.IsReservedHeader(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	headers := make([]kgo.RecordHeader, len(names))
	for i, k := range names {
		headers[i] = kgo.RecordHeader{Key: k, Value: []byte(e.Headers[k])}
	}
	return headers
}

// Field returns the value of an event's field name as JSON: a field the
// row brought from a foreign outbox table (store.Event.Fields, under its
// column's name) first, then herald's own columns (id, aggregate_type,
// aggregate_id, event_type as strings; aggregate_seq, schema_version as
// numbers; occurred_at as microseconds since the epoch, as Debezium
// renders a DATETIME(6)). ok is false when the event has no such field.
func Field(e store.Event, name string) (value json.RawMessage, ok bool) {
	if v, ok := e.Fields[name]; ok {
		return v, true
	}
	quote := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	switch name {
	case "id":
		return quote(e.ID), true
	case "aggregate_type":
		return quote(e.AggregateType), true
	case "aggregate_id":
		return quote(e.AggregateID), true
	case "event_type":
		return quote(e.EventType), true
	case "aggregate_seq":
		return json.RawMessage(strconv.FormatUint(e.AggregateSeq, 10)), true
	case "schema_version":
		return json.RawMessage(strconv.Itoa(int(e.SchemaVersion))), true
	case "occurred_at":
		return json.RawMessage(strconv.FormatInt(e.OccurredAt.UnixMicro(), 10)), true
	}
	return nil, false
}
