package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// CloudEventsMode is a content mode of the CloudEvents Kafka protocol
// binding.
type CloudEventsMode string

const (
	// CloudEventsBinary carries the attributes in ce_* headers and the
	// event's data (the payload) as the value. The default.
	CloudEventsBinary CloudEventsMode = "binary"
	// CloudEventsStructured carries the whole event as a JSON document
	// (content type application/cloudevents+json).
	CloudEventsStructured CloudEventsMode = "structured"
)

// CloudEventsSourceDefault is CloudEventsConfig.Source's default.
const CloudEventsSourceDefault = "/herald/{aggregate_type}"

// CloudEventsConfig shapes the cloudevents format.
type CloudEventsConfig struct {
	// Mode is the content mode. Defaults to CloudEventsBinary.
	Mode CloudEventsMode
	// Source is every event's source attribute, a URI-reference, in which
	// {aggregate_type} stands for the event's aggregate type. Defaults to
	// CloudEventsSourceDefault.
	Source string
}

// The CloudEvents 1.0 Kafka protocol binding's names and values
// (cloudevents/spec v1.0.2: cloudevents/spec.md,
// bindings/kafka-protocol-binding.md, formats/json-format.md).
const (
	ceSpecVersion = "1.0"
	// ceHeaderPrefix begins the header of each attribute in binary mode.
	ceHeaderPrefix = "ce_"
	// ceContentTypeHeader carries datacontenttype in binary mode and the
	// event format's media type in structured mode.
	ceContentTypeHeader = "content-type"
	ceDataContentType   = "application/json"
	ceStructuredType    = "application/cloudevents+json"
	// ceSourcePlaceholder is the one placeholder Source may hold.
	ceSourcePlaceholder = "{aggregate_type}"
	// ceSchemaVersion is the extension attribute (an Integer) that carries
	// the event's schema version, by which consumers parse its data:
	// extension names are lowercase a-z0-9 (spec.md, section 3.1.1).
	ceSchemaVersion = "schemaversion"
)

// ceAttributes are the attributes every record carries.
var ceAttributes = []string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", ceSchemaVersion}

// cePlaceholder finds what looks like a placeholder in Source.
var cePlaceholder = regexp.MustCompile(`\{[^{}]*\}`)

func (c CloudEventsConfig) withDefaults() CloudEventsConfig {
	if c.Mode == "" {
		c.Mode = CloudEventsBinary
	}
	if c.Source == "" {
		c.Source = CloudEventsSourceDefault
	}
	return c
}

// validate reports every invalid field of c at once, each as a
// *config.Error naming it.
func (c CloudEventsConfig) validate() error {
	c = c.withDefaults()
	var errs config.Errors
	if c.Mode != CloudEventsBinary && c.Mode != CloudEventsStructured {
		errs.Add("Mode", "must be %s or %s, got %q", CloudEventsBinary, CloudEventsStructured, c.Mode)
	}
	if err := checkSource(c.Source); err != nil {
		errs.Add("Source", "%v", err)
	}
	return errs.Err()
}

// checkSource says what is wrong with a Source template, if anything.
func checkSource(src string) error {
	if strings.TrimSpace(src) == "" {
		return errors.New("must not be blank")
	}
	rest := strings.ReplaceAll(src, ceSourcePlaceholder, "")
	if unknown := cePlaceholder.FindAllString(rest, -1); len(unknown) > 0 {
		return fmt.Errorf("unknown placeholder %s in %q (the only one is %s)", strings.Join(unknown, ", "), src, ceSourcePlaceholder)
	}
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q has a brace outside %s", src, ceSourcePlaceholder)
	}
	// An aggregate type is path-escaped where it stands (expandSource), and
	// encode checks each event's source again (Source "{aggregate_type}"
	// and aggregate type ":x" make no URI-reference).
	if _, err := url.Parse(strings.ReplaceAll(src, ceSourcePlaceholder, "aggregate")); err != nil {
		return fmt.Errorf("%q is not a URI-reference: %v", src, err)
	}
	return nil
}

// cloudEvents builds the records of the cloudevents format.
type cloudEvents struct {
	mode   CloudEventsMode
	source string
}

// newCloudEvents returns the cloudevents format shaped by c, or c's
// validation errors.
func newCloudEvents(c CloudEventsConfig) (*cloudEvents, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	return &cloudEvents{mode: c.Mode, source: c.Source}, nil
}

// ceEvent is an event's attributes and data as the JSON event format
// writes them, in the order the structured value lists them.
type ceEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            string          `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	SchemaVersion   uint16          `json:"schemaversion,omitempty"`
	Data            json.RawMessage `json:"data"`
}

// encode builds e's record in c's content mode. Key = aggregate id in
// both modes, so an aggregate's records keep their order; the event's own
// headers follow the binding's (storedHeaders), less any that would give
// one of the attributes herald sets a second value (sameAsAttribute).
func (c *cloudEvents) encode(e store.Event, topic string) (*kgo.Record, error) {
	ev, err := c.event(e)
	if err != nil {
		return nil, &EncodeError{err}
	}
	var value []byte
	var headers []kgo.RecordHeader
	switch c.mode {
	case CloudEventsStructured:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		// The payload's strings stay as stored: no \u003c for "<".
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ev); err != nil {
			return nil, &EncodeError{fmt.Errorf("cloudevent %s: %w", e.ID, err)}
		}
		value = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		headers = []kgo.RecordHeader{{Key: ceContentTypeHeader, Value: []byte(ceStructuredType)}}
	default:
		// The data is the value as stored, byte for byte.
		value = e.Payload
		headers = ev.binaryHeaders()
	}
	for _, h := range storedHeaders(e) {
		if !sameAsAttribute(h.Key) {
			headers = append(headers, h)
		}
	}
	// Timestamp stays zero, so franz-go stamps the produce time (why it is
	// not occurred_at: encodeHerald). occurred_at travels as the time
	// attribute.
	return &kgo.Record{Topic: topic, Key: []byte(e.AggregateID), Value: value, Headers: headers}, nil
}

// event maps e onto its CloudEvent, or says why e cannot be one as it is
// stored.
func (c *cloudEvents) event(e store.Event) (ceEvent, error) {
	ev := ceEvent{
		SpecVersion: ceSpecVersion,
		ID:          e.ID,
		Source:      c.expandSource(e.AggregateType),
		Type:        e.EventType,
		Subject:     e.AggregateID,
		// As the SDKs write a time: UTC, RFC 3339 with the fractional
		// seconds it has (microseconds for a stored row), trailing zeros
		// dropped.
		Time:            e.OccurredAt.UTC().Format(time.RFC3339Nano),
		DataContentType: ceDataContentType,
		SchemaVersion:   e.SchemaVersion,
		Data:            e.Payload,
	}
	// id, source and type are required and subject present, each non-empty
	// (spec.md, section 3.1); blank is empty to the SDKs' validation.
	for _, attr := range []struct{ name, value string }{
		{"id (event id)", ev.ID},
		{"source", ev.Source},
		{"type (event type)", ev.Type},
		{"subject (aggregate id)", ev.Subject},
	} {
		if strings.TrimSpace(attr.value) == "" {
			return ceEvent{}, fmt.Errorf("cloudevent %s: attribute %s is empty", e.ID, attr.name)
		}
		// Header values and JSON strings are UTF-8 (the binding, 3.2.3).
		if !utf8.ValidString(attr.value) {
			return ceEvent{}, fmt.Errorf("cloudevent %s: attribute %s is not UTF-8", e.ID, attr.name)
		}
	}
	if _, err := url.Parse(ev.Source); err != nil {
		return ceEvent{}, fmt.Errorf("cloudevent %s: source %q is not a URI-reference", e.ID, ev.Source)
	}
	// datacontenttype says application/json in both modes, and structured
	// mode embeds the data as a JSON value.
	if !json.Valid(e.Payload) {
		return ceEvent{}, fmt.Errorf("cloudevent %s: payload is not valid JSON", e.ID)
	}
	return ev, nil
}

// binaryHeaders returns ev's attributes as binary mode's headers: the
// required four, subject, time and the schema version (when the event has
// one) as ce_* headers, then datacontenttype as content-type (the
// binding, section 3.2).
func (ev ceEvent) binaryHeaders() []kgo.RecordHeader {
	header := func(name, value string) kgo.RecordHeader {
		return kgo.RecordHeader{Key: name, Value: []byte(value)}
	}
	headers := []kgo.RecordHeader{
		header(ceHeaderPrefix+"specversion", ev.SpecVersion),
		header(ceHeaderPrefix+"id", ev.ID),
		header(ceHeaderPrefix+"source", ev.Source),
		header(ceHeaderPrefix+"type", ev.Type),
		header(ceHeaderPrefix+"subject", ev.Subject),
		header(ceHeaderPrefix+"time", ev.Time),
	}
	if ev.SchemaVersion > 0 {
		headers = append(headers, header(ceHeaderPrefix+ceSchemaVersion, strconv.Itoa(int(ev.SchemaVersion))))
	}
	return append(headers, header(ceContentTypeHeader, ev.DataContentType))
}

// expandSource returns the source attribute of aggregateType's events:
// path-escaped, an aggregate type keeps the source a URI-reference
// ("line item" becomes "line%20item"; "order" stays "order").
func (c *cloudEvents) expandSource(aggregateType string) string {
	return strings.ReplaceAll(c.source, ceSourcePlaceholder, url.PathEscape(aggregateType))
}

// sameAsAttribute reports whether a header of the event's own would stand
// for an attribute herald sets (its ce_* header, or content-type for
// datacontenttype), in any letter case as readers compare them: readers
// take the last of two headers of one name, so such a header would
// replace herald's attribute. The record drops it, as it drops headers in
// herald's reserved prefix.
func sameAsAttribute(name string) bool {
	name = strings.ToLower(name)
	if name == ceContentTypeHeader {
		return true
	}
	attr, ok := strings.CutPrefix(name, ceHeaderPrefix)
	return ok && slices.Contains(ceAttributes, attr)
}
