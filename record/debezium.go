package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// Defaults of DebeziumConfig, Debezium's own (EventRouterConfigDefinition,
// Debezium 3.5).
const (
	// DebeziumRouteByFieldDefault: herald's column for Debezium's
	// route.by.field (whose default, aggregatetype, a foreign table's
	// mapping turns into aggregate_type).
	DebeziumRouteByFieldDefault = "aggregate_type"
	// DebeziumRouteTopicRegexDefault is route.topic.regex's default.
	DebeziumRouteTopicRegexDefault = "(?<routedByValue>.*)"
	// DebeziumRouteTopicReplacementDefault is route.topic.replacement's
	// default.
	DebeziumRouteTopicReplacementDefault = "outbox.event.${routedByValue}"
)

// Converter is how Kafka Connect turns a record's key or value into bytes.
type Converter string

const (
	// ConverterString is org.apache.kafka.connect.storage.StringConverter:
	// a string's UTF-8 bytes.
	ConverterString Converter = "string"
	// ConverterJSON is org.apache.kafka.connect.json.JsonConverter with
	// schemas.enable=false: the value as JSON (a string as a JSON string).
	ConverterJSON Converter = "json"
)

// Placement is where table.fields.additional.placement puts a field.
type Placement string

const (
	// PlacementHeader adds the field as a record header.
	PlacementHeader Placement = "header"
	// PlacementEnvelope adds the field to the value, beside "payload".
	PlacementEnvelope Placement = "envelope"
)

// AdditionalField is one entry of table.fields.additional.placement.
type AdditionalField struct {
	// Field is the field's name (Field's lookup: a foreign table's column,
	// or one of herald's).
	Field string
	// Placement is where it goes.
	Placement Placement
	// Alias is the header's or the envelope field's name. Defaults to
	// Field.
	Alias string
}

// DebeziumConfig shapes the debezium format: the Outbox Event Router's
// settings, and the converters of the Kafka Connect worker that ran it.
type DebeziumConfig struct {
	// RouteByField names the field whose value routes the record
	// (${routedByValue}). Defaults to DebeziumRouteByFieldDefault.
	RouteByField string
	// RouteTopicRegex is matched against the whole routing value (a Java
	// regular expression of the kind Go's regexp also reads). Defaults to
	// DebeziumRouteTopicRegexDefault.
	RouteTopicRegex string
	// RouteTopicReplacement is the topic, with ${name} and $n standing for
	// the regex's groups. A value the regex does not match is the topic
	// itself. Defaults to DebeziumRouteTopicReplacementDefault.
	RouteTopicReplacement string
	// AdditionalFields are table.fields.additional.placement's entries, in
	// order.
	AdditionalFields []AdditionalField
	// ExpandJSONPayload is table.expand.json.payload: the payload as
	// structured JSON rather than a string (needs ConverterJSON).
	ExpandJSONPayload bool
	// KeyConverter and ValueConverter are the worker's key.converter and
	// value.converter. Default to ConverterString.
	KeyConverter   Converter
	ValueConverter Converter
	// Timestamp is set when table.field.event.timestamp names a column: the
	// record's timestamp is then the event's occurred_at (in milliseconds),
	// which the mapping fills from that column. Otherwise the record takes
	// the produce time, as Debezium's takes the time it processed the row.
	Timestamp bool
}

// withDefaults fills c's zero fields with their defaults.
func (c DebeziumConfig) withDefaults() DebeziumConfig {
	if c.RouteByField == "" {
		c.RouteByField = DebeziumRouteByFieldDefault
	}
	if c.RouteTopicRegex == "" {
		c.RouteTopicRegex = DebeziumRouteTopicRegexDefault
	}
	if c.RouteTopicReplacement == "" {
		c.RouteTopicReplacement = DebeziumRouteTopicReplacementDefault
	}
	if c.KeyConverter == "" {
		c.KeyConverter = ConverterString
	}
	if c.ValueConverter == "" {
		c.ValueConverter = ConverterString
	}
	fields := make([]AdditionalField, len(c.AdditionalFields))
	for i, f := range c.AdditionalFields {
		if f.Alias == "" {
			f.Alias = f.Field
		}
		fields[i] = f
	}
	c.AdditionalFields = fields
	return c
}

// envelopeFields reports whether any additional field goes to the value.
func (c DebeziumConfig) envelopeFields() bool {
	for _, f := range c.AdditionalFields {
		if f.Placement == PlacementEnvelope {
			return true
		}
	}
	return false
}

// validate reports every invalid field of c at once, each as a
// *config.Error naming it (zero fields take their defaults).
func (c DebeziumConfig) validate() error {
	c = c.withDefaults()
	var errs config.Errors
	if strings.TrimSpace(c.RouteByField) == "" {
		errs.Add("RouteByField", "must not be blank")
	}
	if router, err := compileJavaRegex(c.RouteTopicRegex); err != nil {
		errs.Add("RouteTopicRegex", "%q %v", c.RouteTopicRegex, err)
	} else if _, err := parseJavaReplacement(c.RouteTopicReplacement, router); err != nil {
		errs.Add("RouteTopicReplacement", "%q %v", c.RouteTopicReplacement, err)
	}
	envelopeAliases := map[string]int{}
	for i, f := range c.AdditionalFields {
		name := fmt.Sprintf("AdditionalFields[%d]", i)
		if strings.TrimSpace(f.Field) == "" {
			errs.Add(name+".Field", "must not be blank")
		}
		switch f.Placement {
		case PlacementHeader:
		case PlacementEnvelope:
			if f.Alias == "payload" {
				errs.Add(name+".Alias", `"payload" is the envelope's own field: choose another alias`)
			} else if j, ok := envelopeAliases[f.Alias]; ok {
				errs.Add(name+".Alias", "%q is already the envelope field of AdditionalFields[%d]", f.Alias, j)
			} else {
				envelopeAliases[f.Alias] = i
			}
		case "partition":
			errs.Add(name+".Placement", "partition is not supported: herald partitions by key (the aggregate id); want %s or %s",
				PlacementHeader, PlacementEnvelope)
		default:
			errs.Add(name+".Placement", "must be %s or %s, got %q", PlacementHeader, PlacementEnvelope, f.Placement)
		}
	}
	for _, conv := range []struct {
		field string
		c     Converter
	}{{"KeyConverter", c.KeyConverter}, {"ValueConverter", c.ValueConverter}} {
		if conv.c != ConverterString && conv.c != ConverterJSON {
			errs.Add(conv.field, "must be %s or %s, got %q", ConverterString, ConverterJSON, conv.c)
		}
	}
	if c.ValueConverter == ConverterString {
		// StringConverter would write the value Struct's toString(), which
		// no consumer reads.
		var needs []string
		if c.ExpandJSONPayload {
			needs = append(needs, "ExpandJSONPayload")
		}
		if c.envelopeFields() {
			needs = append(needs, "envelope fields")
		}
		if len(needs) > 0 {
			errs.Add("ValueConverter", "must be %s (the JSON converter) with %s: the string converter would write the "+
				"value Struct's toString()", ConverterJSON, strings.Join(needs, " and "))
		}
	}
	return errs.Err()
}

// debezium builds the records of the debezium format.
type debezium struct {
	cfg      DebeziumConfig
	router   *topicRouter
	envelope bool
}

func newDebezium(c DebeziumConfig) (*debezium, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	c = c.withDefaults()
	router, err := compileJavaRegex(c.RouteTopicRegex)
	if err != nil {
		return nil, err
	}
	if router.parts, err = parseJavaReplacement(c.RouteTopicReplacement, router); err != nil {
		return nil, err
	}
	return &debezium{cfg: c, router: router, envelope: c.envelopeFields()}, nil
}

// encode builds e's record as EventRouterDelegate.apply and the worker's
// converters do: topic from RegexRouter, key = the aggregate id, headers
// "id" then the header fields, value = the payload alone or in an
// envelope. Every failure is an *EncodeError: a row for which Debezium
// would emit no record (its connector fails on it).
func (d *debezium) encode(e store.Event) (*kgo.Record, error) {
	topic, err := d.topic(e)
	if err != nil {
		return nil, &EncodeError{fmt.Errorf("debezium: %w", err)}
	}
	headers, err := d.headers(e)
	if err != nil {
		return nil, &EncodeError{fmt.Errorf("debezium: %w", err)}
	}
	value, err := d.value(e)
	if err != nil {
		return nil, &EncodeError{fmt.Errorf("debezium: %w", err)}
	}
	rec := &kgo.Record{Topic: topic, Key: d.key(e), Value: value, Headers: headers}
	if d.cfg.Timestamp {
		// getEventTimestampMs: a MicroTimestamp column (occurred_at's
		// rendering, Field) divided by 1,000, truncating toward zero as
		// Java's long division does. Otherwise the record keeps a zero
		// Timestamp and franz-go stamps the produce time, as Debezium's
		// carries the time it processed the row (the change event's ts_ms).
		rec.Timestamp = time.UnixMilli(e.OccurredAt.UnixMicro() / 1000).UTC()
	}
	return rec, nil
}

// topic routes e: the value of RouteByField (Struct.getString: a string,
// not null), through the topic router, must be a topic name Kafka takes.
func (d *debezium) topic(e store.Event) (string, error) {
	raw, ok := Field(e, d.cfg.RouteByField)
	if !ok {
		return "", fmt.Errorf("the event has no field %q to route by (RouteByField)", d.cfg.RouteByField)
	}
	n, err := parseField(raw)
	if err != nil {
		return "", fmt.Errorf("field %q (RouteByField): %w", d.cfg.RouteByField, err)
	}
	if n.kind != jsonString {
		return "", fmt.Errorf("field %q (RouteByField) is %s, not a string: Debezium routes by a string column",
			d.cfg.RouteByField, nodeKindName(n))
	}
	topic := d.router.route(string(javaUTF8(n.str)))
	if err := checkTopic(topic); err != nil {
		return "", fmt.Errorf("topic %q, routed from field %q: %w", topic, d.cfg.RouteByField, err)
	}
	return topic, nil
}

// key is the aggregate id (table.field.event.key) through KeyConverter.
func (d *debezium) key(e store.Event) []byte {
	if d.cfg.KeyConverter == ConverterJSON {
		return appendJacksonText(nil, []byte(e.AggregateID))
	}
	return append([]byte{}, e.AggregateID...)
}

// headers are "id" then the header fields, in order, as Kafka Connect's
// SimpleHeaderConverter writes them (Values.convertToString; a null
// value is a header with a null value). Debezium's records carry more
// headers before these, the connector's __debezium.context.* (its
// extended.headers.enabled, on by default): they come from the
// connector, not the router, and herald has none, nor herald's own or
// the event's stored headers.
func (d *debezium) headers(e store.Event) ([]kgo.RecordHeader, error) {
	headers := []kgo.RecordHeader{{Key: "id", Value: append([]byte{}, e.ID...)}}
	for i, f := range d.cfg.AdditionalFields {
		if f.Placement != PlacementHeader {
			continue
		}
		n, err := d.additionalField(e, i)
		if err != nil {
			return nil, err
		}
		var v []byte
		switch n.kind {
		case jsonNull:
		case jsonString:
			v = javaUTF8(n.str)
		case jsonBoolean:
			v = strconv.AppendBool([]byte{}, n.boolean)
		case jsonNumber:
			v = strconv.AppendInt([]byte{}, n.integer, 10)
		}
		headers = append(headers, kgo.RecordHeader{Key: f.Alias, Value: v})
	}
	return headers, nil
}

// additionalField returns the value of AdditionalFields[i] for e: a
// string, a boolean, an integer of 64 bits or null. Debezium's
// table.fields.additional.error.on.missing defaults to true: a field the
// event does not have is an error. A number with a fraction or an
// exponent, an object or an array is one too: Debezium would render the
// column by a type herald does not know (float32 or float64, a decimal, a
// JSON column's text).
func (d *debezium) additionalField(e store.Event, i int) (*jsonNode, error) {
	f := d.cfg.AdditionalFields[i]
	raw, ok := Field(e, f.Field)
	if !ok {
		return nil, fmt.Errorf("the event has no field %q (AdditionalFields[%d])", f.Field, i)
	}
	n, err := parseField(raw)
	if err != nil {
		return nil, fmt.Errorf("field %q (AdditionalFields[%d]): %w", f.Field, i, err)
	}
	switch {
	case n.kind == jsonObject || n.kind == jsonArray:
		return nil, fmt.Errorf("field %q (AdditionalFields[%d]) is %s: the type is not supported (a string, an integer, a boolean or null is)",
			f.Field, i, nodeKindName(n))
	case n.kind == jsonNumber && n.num == numberDouble:
		return nil, fmt.Errorf("field %q (AdditionalFields[%d]) is the number %s: a number with a fraction or an exponent is not supported (Debezium's rendering depends on the column's type)",
			f.Field, i, n.text)
	case n.kind == jsonNumber && n.num == numberBigInteger:
		return nil, fmt.Errorf("field %q (AdditionalFields[%d]) is the integer %s, beyond 64 bits: not supported (Debezium's rendering depends on the column's type)",
			f.Field, i, n.text)
	}
	return n, nil
}

// parseField reads a field's JSON value (Field's result).
func parseField(raw json.RawMessage) (*jsonNode, error) {
	p := &jacksonParser{src: raw}
	n, err := p.value()
	if err == nil {
		if p.skipSpace(); p.pos != len(raw) {
			err = errors.New("has text after its JSON value")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("not a JSON value: %v", err)
	}
	return n, nil
}

// value is the record's value: the payload (the stored text, a string
// column to Debezium), expanded when ExpandJSONPayload says so, alone or
// in the envelope {"payload": ..., alias: field, ...}, through
// ValueConverter.
func (d *debezium) value(e store.Event) ([]byte, error) {
	if !d.cfg.ExpandJSONPayload && !d.envelope {
		if d.cfg.ValueConverter == ConverterString {
			return append([]byte{}, e.Payload...), nil
		}
		return appendJacksonText(nil, e.Payload), nil
	}
	// validate() makes ValueConverter the JSON converter from here on.
	var payload []byte
	depth := 0
	if d.cfg.ExpandJSONPayload {
		x, err := expandJSONPayload(e.Payload)
		if err != nil {
			return nil, err
		}
		if x.NullSchema && d.envelope {
			// The envelope's schema is cached by the payload's schema, in a
			// map that refuses a null key.
			return nil, errors.New("the payload is an empty JSON array, whose expansion has a null schema, " +
				"which Debezium's envelope cannot take (the Debezium connector stops on this row)")
		}
		payload, depth = x.JSON, x.Depth
	}
	if payload == nil {
		payload = appendJacksonText(nil, e.Payload)
	}
	if !d.envelope {
		return payload, nil
	}
	if depth+1 > jacksonMaxDepth {
		return nil, fmt.Errorf("the envelope would nest %d levels deep, more than Jackson writes (%d): "+
			"Kafka Connect's JsonConverter refuses the record", depth+1, jacksonMaxDepth)
	}
	v := append([]byte(`{"payload":`), payload...)
	for i, f := range d.cfg.AdditionalFields {
		if f.Placement != PlacementEnvelope {
			continue
		}
		n, err := d.additionalField(e, i)
		if err != nil {
			return nil, err
		}
		v = append(v, ',')
		v = appendJacksonText(v, []byte(f.Alias))
		v = append(v, ':')
		switch n.kind {
		case jsonNull:
			v = append(v, "null"...)
		case jsonString:
			v = appendJacksonString(v, n.str)
		case jsonBoolean:
			v = strconv.AppendBool(v, n.boolean)
		case jsonNumber:
			v = strconv.AppendInt(v, n.integer, 10)
		}
	}
	return append(v, '}'), nil
}
