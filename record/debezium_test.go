package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// The expected bytes below are what Debezium 3.5's EventRouter and Kafka
// Connect 4.1's converters (Jackson 2.19) produce for the same row, as
// read from their sources; a case whose bytes follow from a rule that is
// not obvious names the Java class and method it comes from.

// dbzPayload is the fixture's payload: a member order that is not
// alphabetical, a number with a trailing zero, an array of objects.
const dbzPayload = `{"orderId":42,"total":12.50,"lines":[{"sku":"A-1","qty":2}]}`

// dbzEvent is the event the debezium tests encode: stored headers of its
// own (never on a debezium record) and foreign fields of every kind.
func dbzEvent() store.Event {
	return store.Event{
		ID:            "0b6a1d6e-3f0c-4a8e-9a57-6f1d2c3b4a59",
		AggregateType: "order",
		AggregateID:   "order-42",
		AggregateSeq:  7,
		EventType:     "OrderCreated",
		SchemaVersion: 2,
		Payload:       []byte(dbzPayload),
		Headers:       map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		OccurredAt:    time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC),
		Fields: map[string]json.RawMessage{
			"destination": json.RawMessage(`"payments"`),
			"flag":        json.RawMessage(`true`),
			"gone":        json.RawMessage(`null`),
			"neg":         json.RawMessage(`-0`),
			"big":         json.RawMessage(`-9223372036854775808`),
			"note":        json.RawMessage(`"\u00e9\ud83d\ude00\n\u0001"`),
			"empty":       json.RawMessage(`""`),
			"ratio":       json.RawMessage(`1.5`),
			"hundred":     json.RawMessage(`1e2`),
			"huge":        json.RawMessage(`9223372036854775808`),
			"object":      json.RawMessage(`{"a":1}`),
			"list":        json.RawMessage(`[1]`),
		},
	}
}

// dbzEncode returns e's record in the debezium format shaped by c.
func dbzEncode(t *testing.T, c DebeziumConfig, e store.Event) (*kgo.Record, error) {
	t.Helper()
	d, err := newDebezium(c)
	if err != nil {
		t.Fatalf("newDebezium: %v", err)
	}
	return d.encode(e)
}

// dbzCheckError fails t unless err is an *EncodeError whose text
// contains want.
func dbzCheckError(t *testing.T, err error, want string) {
	t.Helper()
	var ee *EncodeError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v, want an *EncodeError containing %q", err, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}
}

func TestDebeziumTopic(t *testing.T) {
	tests := []struct {
		name    string
		cfg     DebeziumConfig
		edit    func(e *store.Event)
		want    string
		wantErr string
	}{
		{name: "default replacement", want: "outbox.event.order"},
		{
			name: "route by a foreign field",
			cfg:  DebeziumConfig{RouteByField: "destination"},
			want: "outbox.event.payments",
		},
		{
			name: "named and numbered groups",
			cfg:  DebeziumConfig{RouteTopicRegex: `(?<kind>[a-z]+)-(\d+)`, RouteTopicReplacement: `${kind}.v$2`},
			edit: func(e *store.Event) { e.AggregateType = "order-3" },
			want: "order.v3",
		},
		{
			// Matcher.appendReplacement: "$10" takes the second digit only
			// while it still names a group; with two groups it is $1, then
			// a literal 0.
			name: "group number takes the digits that name a group",
			cfg:  DebeziumConfig{RouteTopicRegex: `(.)(.*)`, RouteTopicReplacement: `$10.$2`},
			want: "o0.rder",
		},
		{
			name: "escaped characters of the replacement are literal",
			cfg:  DebeziumConfig{RouteTopicReplacement: `outbox\.event\.${routedByValue}`},
			want: "outbox.event.order",
		},
		{
			name: "a group that took no part is empty",
			cfg:  DebeziumConfig{RouteTopicRegex: `(?<a>x)?(?<b>.*)`, RouteTopicReplacement: `${a}t.${b}`},
			want: "t.order",
		},
		{
			name: "no match: the value is the topic",
			cfg:  DebeziumConfig{RouteTopicRegex: `orders-(.*)`, RouteTopicReplacement: `t.$1`},
			want: "order",
		},
		{
			name: "the regex must match the whole value",
			cfg:  DebeziumConfig{RouteTopicRegex: `ord`, RouteTopicReplacement: `t`},
			want: "order",
		},
		{
			// RegexRouter.apply: matches() holds, then replaceFirst()
			// replaces what find() matches first: the reluctant group's
			// empty match at 0, before the rest of the value.
			name: "replaceFirst replaces the first match only",
			cfg:  DebeziumConfig{RouteTopicRegex: `(?<v>.*?)`, RouteTopicReplacement: `t.${v}x.`},
			want: "t.x.order",
		},
		{
			// java.util.regex.Pattern: '.' does not match a line
			// terminator (U+2028 here), so the value is not matched and is
			// the topic itself, which Kafka refuses.
			name:    "Java's dot refuses line terminators",
			cfg:     DebeziumConfig{RouteTopicReplacement: `fixed`},
			edit:    func(e *store.Event) { e.AggregateType = "a\u2028b" },
			wantErr: "contains '\\u2028'",
		},
		{
			name:    "a field the event does not have",
			cfg:     DebeziumConfig{RouteByField: "nope"},
			wantErr: `no field "nope" to route by`,
		},
		{
			name:    "a numeric field",
			cfg:     DebeziumConfig{RouteByField: "aggregate_seq"},
			wantErr: "is an int32 number, not a string",
		},
		{
			name:    "a null field",
			cfg:     DebeziumConfig{RouteByField: "gone"},
			wantErr: "is null, not a string",
		},
		{
			name:    "a topic Kafka refuses",
			edit:    func(e *store.Event) { e.AggregateType = "order lines" },
			wantErr: `topic "outbox.event.order lines"`,
		},
		{
			name:    "a topic too long",
			edit:    func(e *store.Event) { e.AggregateType = strings.Repeat("o", 237) },
			wantErr: "250 characters long",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dbzEvent()
			if tt.edit != nil {
				tt.edit(&e)
			}
			rec, err := dbzEncode(t, tt.cfg, e)
			if tt.wantErr != "" {
				dbzCheckError(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Topic != tt.want {
				t.Errorf("topic = %q, want %q", rec.Topic, tt.want)
			}
		})
	}
}

func TestDebeziumKey(t *testing.T) {
	tests := []struct {
		name        string
		conv        Converter
		aggregateID string
		want        string
	}{
		{"string converter", ConverterString, "order-42", "order-42"},
		{"string converter keeps UTF-8", "", "é😀", "é😀"},
		{"json converter", ConverterJSON, "order-42", `"order-42"`},
		// UTF8JsonGenerator writes each surrogate as an escape.
		{"json converter escapes as Jackson", ConverterJSON, "a\"b\\/é😀\x01\x7f", `"a\"b\\/é\uD83D\uDE00\u0001` + "\x7f" + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dbzEvent()
			e.AggregateID = tt.aggregateID
			rec, err := dbzEncode(t, DebeziumConfig{KeyConverter: tt.conv}, e)
			if err != nil {
				t.Fatal(err)
			}
			if string(rec.Key) != tt.want {
				t.Errorf("key = %s, want %s", rec.Key, tt.want)
			}
		})
	}
}

// dbzHeader is a header for the tables: value nil for a null value.
type dbzHeader struct {
	key   string
	value []byte
}

func TestDebeziumHeaders(t *testing.T) {
	header := func(field, alias string) AdditionalField {
		return AdditionalField{Field: field, Placement: PlacementHeader, Alias: alias}
	}
	tests := []struct {
		name    string
		fields  []AdditionalField
		want    []dbzHeader
		wantErr string
	}{
		{
			name: "id alone, none of the event's own",
			want: []dbzHeader{{"id", []byte("0b6a1d6e-3f0c-4a8e-9a57-6f1d2c3b4a59")}},
		},
		{
			// SimpleHeaderConverter.fromConnectHeader: a null value is a
			// null header; Values.convertToString prints an integer (-0 is
			// 0), a boolean, a string as it is.
			name: "fields in config order, each as Connect prints it",
			fields: []AdditionalField{
				header("event_type", "eventType"),
				header("aggregate_seq", ""),
				header("flag", ""),
				header("gone", ""),
				header("neg", ""),
				header("big", ""),
				header("note", ""),
				header("empty", ""),
				header("event_type", "eventType"),
			},
			want: []dbzHeader{
				{"id", []byte("0b6a1d6e-3f0c-4a8e-9a57-6f1d2c3b4a59")},
				{"eventType", []byte("OrderCreated")},
				{"aggregate_seq", []byte("7")},
				{"flag", []byte("true")},
				{"gone", nil},
				{"neg", []byte("0")},
				{"big", []byte("-9223372036854775808")},
				{"note", []byte("é😀\n\x01")},
				{"empty", []byte{}},
				{"eventType", []byte("OrderCreated")},
			},
		},
		{
			name:    "a field the event does not have",
			fields:  []AdditionalField{header("flag", ""), header("nope", "")},
			wantErr: `no field "nope" (AdditionalFields[1])`,
		},
		{
			name:    "a number with a fraction",
			fields:  []AdditionalField{header("ratio", "")},
			wantErr: "the number 1.5: a number with a fraction or an exponent is not supported",
		},
		{
			name:    "a number with an exponent",
			fields:  []AdditionalField{header("hundred", "")},
			wantErr: "the number 1e2",
		},
		{
			name:    "an integer beyond 64 bits",
			fields:  []AdditionalField{header("huge", "")},
			wantErr: "beyond 64 bits: not supported",
		},
		{
			name:    "an object",
			fields:  []AdditionalField{header("object", "")},
			wantErr: "is an object: the type is not supported",
		},
		{
			name:    "an array",
			fields:  []AdditionalField{header("list", "")},
			wantErr: "is an array: the type is not supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := dbzEncode(t, DebeziumConfig{AdditionalFields: tt.fields}, dbzEvent())
			if tt.wantErr != "" {
				dbzCheckError(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]dbzHeader, len(rec.Headers))
			for i, h := range rec.Headers {
				got[i] = dbzHeader{h.Key, h.Value}
			}
			if !slices.EqualFunc(got, tt.want, func(a, b dbzHeader) bool {
				return a.key == b.key && bytes.Equal(a.value, b.value) && (a.value == nil) == (b.value == nil)
			}) {
				t.Errorf("headers = %q, want %q", got, tt.want)
			}
		})
	}
}

// dbzJSONString is s as a JSON string literal the way Jackson writes it
// (s holds no control characters, '"', '\' or characters beyond U+FFFF).
func dbzJSONString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// dbzWideArray is {"x":[{"k0":0},{"k1":1},...]}: n objects of distinct
// members, each written with all n.
func dbzWideArray(n int) string {
	var b strings.Builder
	b.WriteString(`{"x":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k%d":%d}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestDebeziumValue(t *testing.T) {
	jsonExpand := DebeziumConfig{ValueConverter: ConverterJSON, ExpandJSONPayload: true}
	envelope := []AdditionalField{
		{Field: "event_type", Placement: PlacementEnvelope, Alias: "eventType"},
		{Field: "aggregate_seq", Placement: PlacementEnvelope},
		{Field: "flag", Placement: PlacementHeader},
		{Field: "flag", Placement: PlacementEnvelope},
		{Field: "gone", Placement: PlacementEnvelope, Alias: "nothing"},
		{Field: "note", Placement: PlacementEnvelope},
	}
	const envelopeTail = `,"eventType":"OrderCreated","aggregate_seq":7,"flag":true,"nothing":null,"note":"é\uD83D\uDE00\n\u0001"}`
	deep := func(n int) string { return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1) }
	tests := []struct {
		name    string
		cfg     DebeziumConfig
		payload string
		want    string
		wantErr string
	}{
		{
			name:    "string converter: the stored bytes",
			payload: " {\"a\" : \"é😀\\u00e9\"}\n",
			want:    " {\"a\" : \"é😀\\u00e9\"}\n",
		},
		{
			name:    "json converter: a JSON string as Jackson writes it",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON},
			payload: `{"a":"x\ty/é😀"}`,
			want:    `"{\"a\":\"x\\ty/é\uD83D\uDE00\"}"`,
		},
		{
			name:    "expanded: document order, numbers as Jackson reads them",
			cfg:     jsonExpand,
			payload: dbzPayload,
			want:    `{"orderId":42,"total":12.5,"lines":[{"sku":"A-1","qty":2}]}`,
		},
		{
			name:    "expanded: nested objects and arrays of scalars",
			cfg:     jsonExpand,
			payload: `{"o":{"p":{"q":true,"r":"s"}},"xs":[1,null,2],"ss":["a","b"],"m":[[1,2],[3],[]],"bs":[false]}`,
			want:    `{"o":{"p":{"q":true,"r":"s"}},"xs":[1,null,2],"ss":["a","b"],"m":[[1,2],[3],[]],"bs":[false]}`,
		},
		{
			// JsonSchemaData.toConnectSchema: a null member has no schema
			// and an empty array a null one: both are dropped. An empty
			// object is a struct without fields.
			name:    "expanded: null members and empty arrays dropped, empty objects kept",
			cfg:     jsonExpand,
			payload: `{"a":null,"b":[],"c":{},"d":{"e":[],"f":null},"g":1}`,
			want:    `{"c":{},"d":{},"g":1}`,
		},
		{
			name:    "expanded: an empty object",
			cfg:     jsonExpand,
			payload: `{}`,
			want:    `{}`,
		},
		{
			// toConnectSchemaWithCycles merges the elements' schemas; each
			// element is written with every merged field, null where it
			// has none. Debezium merges in HashSet order, which for
			// elements of different members varies between JVMs; herald
			// merges in document order (a, c, b here).
			name:    "expanded: objects in an array share the merged schema",
			cfg:     jsonExpand,
			payload: `{"items":[{"a":1,"b":null},{"a":2,"c":[true]},{"a":3,"b":"x"}]}`,
			want:    `{"items":[{"a":1,"c":null,"b":null},{"a":2,"c":[true],"b":null},{"a":3,"c":null,"b":"x"}]}`,
		},
		{
			name:    "expanded: a null among objects of the same members",
			cfg:     jsonExpand,
			payload: `{"items":[{"a":1},null,{"a":2}]}`,
			want:    `{"items":[{"a":1},null,{"a":2}]}`,
		},
		{
			// The merged schema holds "a" (from the first element), so the
			// second element's empty array is written, not dropped.
			name:    "expanded: an empty array under a merged field",
			cfg:     jsonExpand,
			payload: `{"x":[{"a":[1]},{"a":[]}]}`,
			want:    `{"x":[{"a":[1]},{"a":[]}]}`,
		},
		{
			// toConnectSchemaWithCycles: an array of arrays takes the schema
			// of its first element alone, so the second array's objects are
			// written with the first one's members.
			name:    "expanded: an array of arrays of objects",
			cfg:     jsonExpand,
			payload: `{"m":[[{"a":1}],[{"b":2},{"a":3}]]}`,
			want:    `{"m":[[{"a":1}],[{"a":null},{"a":3}]]}`,
		},
		{
			// Debezium would merge {p} or {q} first, by JVM; herald keeps
			// the first element's.
			name:    "expanded: conflicting objects under one field",
			cfg:     jsonExpand,
			payload: `{"x":[{"a":{"p":1}},{"a":{"q":2}}]}`,
			want:    `{"x":[{"a":{"p":1}},{"a":{"p":null}}]}`,
		},
		{
			// UTF8JsonGenerator: control characters as \b \t \n \f \r or
			// \u00XX with upper-case hex, DEL and '/' as they are, each
			// surrogate (paired or lone) as an escape, other non-ASCII as
			// UTF-8.
			name:    "expanded: strings as Jackson writes them",
			cfg:     jsonExpand,
			payload: `{"s":"é€😀 \u00e9 \ud83d\ude00 \u001f\u007f\/\b\f\n\r\t\"\\ \ud800","k\u0000":1}`,
			want:    `{"s":"é€\uD83D\uDE00 é \uD83D\uDE00 \u001F` + "\x7f" + `/\b\f\n\r\t\"\\ \uD800","k\u0000":1}`,
		},
		{
			// ObjectMapper.readTree: IntNode, LongNode by value, DoubleNode
			// for a fraction or an exponent (int32, int64, float64 schemas);
			// Double.toString writes the doubles, and Jackson writes an
			// infinity as a string (WRITE_NAN_AS_STRINGS).
			name: "expanded: numbers",
			cfg:  jsonExpand,
			payload: `{"a":1,"b":2147483648,"c":1.0,"d":1.10,"e":1e20,"f":0.0001,"g":-0.0,"h":1e2,"i":-0,` +
				`"j":-2147483648,"k":-2147483649,"l":9223372036854775807,"m":1E-5,"n":12345678.9,"o":0.001,"p":1e400}`,
			want: `{"a":1,"b":2147483648,"c":1.0,"d":1.1,"e":1.0E20,"f":1.0E-4,"g":-0.0,"h":100.0,"i":0,` +
				`"j":-2147483648,"k":-2147483649,"l":9223372036854775807,"m":1.0E-5,"n":1.23456789E7,"o":0.001,"p":"Infinity"}`,
		},
		{
			name:    "expanded: a duplicate member keeps its first place and last value",
			cfg:     jsonExpand,
			payload: `{"a":1,"b":2,"a":3}`,
			want:    `{"a":3,"b":2}`,
		},
		{
			// getFirstArrayElement: the elements' node types differ.
			name:    "kept: a heterogeneous array",
			cfg:     jsonExpand,
			payload: `{"xs":[1,"a"]}`,
			want:    dbzJSONString(`{"xs":[1,"a"]}`),
		},
		{
			// getFirstArrayElement: an int32 and an int64 schema differ.
			name:    "kept: numbers of different kinds in an array",
			cfg:     jsonExpand,
			payload: `{"xs":[1,2147483648]}`,
			want:    dbzJSONString(`{"xs":[1,2147483648]}`),
		},
		{
			name:    "kept: an array of nulls",
			cfg:     jsonExpand,
			payload: `{"xs":[null,null]}`,
			want:    dbzJSONString(`{"xs":[null,null]}`),
		},
		{
			// The first element, an empty array, gives no member schema.
			name:    "kept: an array whose first element is an empty array",
			cfg:     jsonExpand,
			payload: `{"m":[[],[1]]}`,
			want:    dbzJSONString(`{"m":[[],[1]]}`),
		},
		{
			// SchemaBuilder.field refuses an empty field name.
			name:    "kept: an empty member name",
			cfg:     jsonExpand,
			payload: `{"":1}`,
			want:    dbzJSONString(`{"":1}`),
		},
		{
			// parseJsonPayload checks startsWith("{") without trimming.
			name:    "kept: a payload starting with white space",
			cfg:     jsonExpand,
			payload: ` {"a":1}`,
			want:    dbzJSONString(` {"a":1}`),
		},
		{
			name:    "kept: a payload that is a JSON string",
			cfg:     jsonExpand,
			payload: `"{}"`,
			want:    `"\"{}\""`,
		},
		{
			// StreamReadConstraints: 1,000 levels at most.
			name:    "kept: nested deeper than Jackson reads",
			cfg:     jsonExpand,
			payload: deep(1001),
			want:    dbzJSONString(deep(1001)),
		},
		{
			name:    "expanded: nested as deep as Jackson reads",
			cfg:     jsonExpand,
			payload: deep(1000),
			want:    deep(1000),
		},
		{
			// The empty array's schema is null: toConnectData throws with
			// the payload a string under no schema, which JsonConverter
			// writes as a JSON string.
			name:    "kept: an empty top-level array",
			cfg:     jsonExpand,
			payload: `[]`,
			want:    `"[]"`,
		},
		{
			// toConnectSchema throws first: the first element is an empty
			// array.
			name:    "kept: a top-level array of empty arrays",
			cfg:     jsonExpand,
			payload: `[[]]`,
			want:    `"[[]]"`,
		},
		{
			// toConnectData gives a BigIntegerNode a BigDecimal, which its
			// float64 schema refuses, after the schema was replaced.
			name:    "refused: an integer beyond 64 bits",
			cfg:     jsonExpand,
			payload: `{"a":{"n":[9223372036854775808]}}`,
			wantErr: "the payload's value at $.a.n[0] is 9223372036854775808, an integer beyond 64 bits",
		},
		{
			// SchemaUtil.copySchemaBasics, which mergeSchema builds on, does
			// not copy the optional flag: objects of different members merge
			// into a required struct, which a null element fails.
			name:    "refused: a null among objects of different members",
			cfg:     jsonExpand,
			payload: `{"items":[{"a":1},{"b":2},null]}`,
			wantErr: "$.items[2] is null among objects of different members",
		},
		{
			// An array of arrays takes its first element's schema alone.
			name:    "refused: an inner array unlike the first",
			cfg:     jsonExpand,
			payload: `{"m":[[1],["x"]]}`,
			wantErr: "$.m[1][0] is a string where the schema Debezium inferred from another element of its array says int32",
		},
		{
			name:    "refused: an expansion too large for any record",
			cfg:     jsonExpand,
			payload: dbzWideArray(4000),
			wantErr: "expands to more than 67108864 bytes",
		},
		{
			// toConnectData makes a Struct of the document: an array
			// schema throws, after the schema was replaced.
			name:    "refused: a top-level array",
			cfg:     jsonExpand,
			payload: `[{"a":1}]`,
			wantErr: "the payload is a JSON array",
		},
		{
			name:    "envelope: the payload as a string beside the fields",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: envelope},
			payload: dbzPayload,
			want:    `{"payload":` + dbzJSONString(dbzPayload) + envelopeTail,
		},
		{
			name:    "envelope: the payload expanded",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: envelope, ExpandJSONPayload: true},
			payload: dbzPayload,
			want:    `{"payload":{"orderId":42,"total":12.5,"lines":[{"sku":"A-1","qty":2}]}` + envelopeTail,
		},
		{
			name:    "envelope: the payload kept a string",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: envelope, ExpandJSONPayload: true},
			payload: `{"xs":[1,"a"]}`,
			want:    `{"payload":` + dbzJSONString(`{"xs":[1,"a"]}`) + envelopeTail,
		},
		{
			// The envelope schema is cached by the payload's schema in a
			// BoundedConcurrentHashMap, whose get(null) throws.
			name:    "envelope: refused for an empty top-level array",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: envelope, ExpandJSONPayload: true},
			payload: `[]`,
			wantErr: "empty JSON array",
		},
		{
			// StreamWriteConstraints: the envelope adds a level to the
			// deepest payload Jackson reads.
			name:    "envelope: refused one level deeper than Jackson writes",
			cfg:     DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: envelope, ExpandJSONPayload: true},
			payload: deep(1000),
			wantErr: "1001 levels deep",
		},
		{
			name: "envelope: a field the event does not have",
			cfg: DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: []AdditionalField{
				{Field: "nope", Placement: PlacementEnvelope},
			}},
			payload: dbzPayload,
			wantErr: `no field "nope" (AdditionalFields[0])`,
		},
		{
			name: "envelope: a number with a fraction",
			cfg: DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: []AdditionalField{
				{Field: "ratio", Placement: PlacementEnvelope},
			}},
			payload: dbzPayload,
			wantErr: "the number 1.5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dbzEvent()
			e.Payload = []byte(tt.payload)
			rec, err := dbzEncode(t, tt.cfg, e)
			if tt.wantErr != "" {
				dbzCheckError(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(rec.Value) != tt.want {
				t.Errorf("value =\n%s\nwant\n%s", rec.Value, tt.want)
			}
			if tt.cfg.ValueConverter == ConverterJSON && !json.Valid(rec.Value) {
				t.Errorf("value %s is not valid JSON", rec.Value)
			}
		})
	}
}

func TestDebeziumEnvelopeHeadersApart(t *testing.T) {
	rec, err := dbzEncode(t, DebeziumConfig{ValueConverter: ConverterJSON, AdditionalFields: []AdditionalField{
		{Field: "event_type", Placement: PlacementEnvelope, Alias: "type"},
		{Field: "event_type", Placement: PlacementHeader, Alias: "type"},
	}}, dbzEvent())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"payload":` + dbzJSONString(dbzPayload) + `,"type":"OrderCreated"}`; string(rec.Value) != want {
		t.Errorf("value = %s, want %s", rec.Value, want)
	}
	if len(rec.Headers) != 2 || rec.Headers[1].Key != "type" || string(rec.Headers[1].Value) != "OrderCreated" {
		t.Errorf("headers = %v, want id and type", rec.Headers)
	}
}

func TestDebeziumTimestamp(t *testing.T) {
	tests := []struct {
		name       string
		timestamp  bool
		occurredAt time.Time
		want       time.Time
	}{
		{
			name:       "off: zero, for franz-go to stamp",
			occurredAt: time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC),
		},
		{
			name:       "on: occurred_at to the millisecond",
			timestamp:  true,
			occurredAt: time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("CET", 3600)),
			want:       time.Date(2026, 1, 2, 2, 4, 5, 678000000, time.UTC),
		},
		{
			// getEventTimestampMs: micros / 1_000, Java's long division,
			// truncates toward zero: -1,500 µs is -1 ms, not -2.
			name:       "on: before 1970, truncated toward zero",
			timestamp:  true,
			occurredAt: time.Unix(0, -1_500_000),
			want:       time.UnixMilli(-1).UTC(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dbzEvent()
			e.OccurredAt = tt.occurredAt
			rec, err := dbzEncode(t, DebeziumConfig{Timestamp: tt.timestamp}, e)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.Timestamp.Equal(tt.want) || rec.Timestamp.IsZero() != tt.want.IsZero() {
				t.Errorf("timestamp = %v, want %v", rec.Timestamp, tt.want)
			}
		})
	}
}

// dbzConfigErrors returns err's *config.Error leaves by field.
func dbzConfigErrors(t *testing.T, err error) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, leaf := range config.Leaves(err) {
		var ce *config.Error
		if !errors.As(leaf, &ce) {
			t.Fatalf("error %v is not a *config.Error", leaf)
		}
		got[ce.Field] = ce.Msg
	}
	return got
}

func TestDebeziumConfigValidateReportsEveryField(t *testing.T) {
	err := DebeziumConfig{
		RouteTopicRegex: `(?<my_group>.*)`,
		AdditionalFields: []AdditionalField{
			{Field: " ", Placement: PlacementHeader},
			{Field: "a", Placement: "partition"},
			{Field: "b", Placement: "body"},
			{Field: "payload", Placement: PlacementEnvelope},
			{Field: "c", Placement: PlacementEnvelope, Alias: "x"},
			{Field: "d", Placement: PlacementEnvelope, Alias: "x"},
		},
		ExpandJSONPayload: true,
		KeyConverter:      "avro",
	}.validate()
	want := map[string]string{
		"RouteTopicRegex":               "which Java refuses",
		"AdditionalFields[0].Field":     "must not be blank",
		"AdditionalFields[1].Placement": "partition is not supported",
		"AdditionalFields[2].Placement": `must be header or envelope, got "body"`,
		"AdditionalFields[3].Alias":     `"payload" is the envelope's own field`,
		"AdditionalFields[5].Alias":     `"x" is already the envelope field of AdditionalFields[4]`,
		"KeyConverter":                  `must be string or json, got "avro"`,
		"ValueConverter":                "must be json (the JSON converter) with ExpandJSONPayload and envelope fields",
	}
	got := dbzConfigErrors(t, err)
	for field, msg := range want {
		if !strings.Contains(got[field], msg) {
			t.Errorf("%s: %q, want it to contain %q", field, got[field], msg)
		}
	}
	for field := range got {
		if _, ok := want[field]; !ok {
			t.Errorf("unexpected error on %s: %s", field, got[field])
		}
	}
}

func TestDebeziumConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   DebeziumConfig
		field string
		want  string
	}{
		{name: "defaults", cfg: DebeziumConfig{}},
		{
			name: "every setting",
			cfg: DebeziumConfig{
				RouteByField: "destination", RouteTopicRegex: `(?<kind>[a-z]+)-(\d+)`, RouteTopicReplacement: `${kind}.v$2`,
				AdditionalFields: []AdditionalField{
					{Field: "event_type", Placement: PlacementEnvelope, Alias: "type"},
					{Field: "event_type", Placement: PlacementHeader, Alias: "type"},
					{Field: "payload", Placement: PlacementHeader},
				},
				ExpandJSONPayload: true, KeyConverter: ConverterJSON, ValueConverter: ConverterJSON, Timestamp: true,
			},
		},
		{name: "blank route field", cfg: DebeziumConfig{RouteByField: " "}, field: "RouteByField", want: "must not be blank"},
		{name: "regex that does not compile", cfg: DebeziumConfig{RouteTopicRegex: `(`}, field: "RouteTopicRegex", want: "does not compile"},
		{name: "lookahead", cfg: DebeziumConfig{RouteTopicRegex: `(?=a).*`}, field: "RouteTopicRegex", want: "does not compile"},
		{name: "Go's named group", cfg: DebeziumConfig{RouteTopicRegex: `(?P<routedByValue>.*)`}, field: "RouteTopicRegex", want: "write (?<name>...)"},
		{name: "the U flag", cfg: DebeziumConfig{RouteTopicRegex: `(?U)(?<routedByValue>.*)`}, field: "RouteTopicRegex", want: "UNICODE_CHARACTER_CLASS"},
		{name: "Java's group name rule", cfg: DebeziumConfig{RouteTopicRegex: `(?<1a>.*)`}, field: "RouteTopicRegex", want: "which Java refuses"},
		{name: "an unknown group name", cfg: DebeziumConfig{RouteTopicReplacement: `t.${other}`}, field: "RouteTopicReplacement", want: "${other}, which is not a group"},
		{name: "a group number too high", cfg: DebeziumConfig{RouteTopicReplacement: `t.$2`}, field: "RouteTopicReplacement", want: "group $2, but RouteTopicRegex has 1 groups"},
		{name: "a lone dollar", cfg: DebeziumConfig{RouteTopicReplacement: `t.$`}, field: "RouteTopicReplacement", want: "ends with $"},
		{name: "a dollar and a letter", cfg: DebeziumConfig{RouteTopicReplacement: `t.$x`}, field: "RouteTopicReplacement", want: `followed by 'x'`},
		{name: "a lone backslash", cfg: DebeziumConfig{RouteTopicReplacement: `t.\`}, field: "RouteTopicReplacement", want: "lone backslash"},
		{name: "an unclosed name", cfg: DebeziumConfig{RouteTopicReplacement: `t.${routedByValue`}, field: "RouteTopicReplacement", want: "without its closing }"},
		{name: "a name starting with a digit", cfg: DebeziumConfig{RouteTopicReplacement: `t.${1a}`}, field: "RouteTopicReplacement", want: "starting with a digit"},
		{name: "an empty name", cfg: DebeziumConfig{RouteTopicReplacement: `t.${}`}, field: "RouteTopicReplacement", want: "without a group name"},
		{name: "a character no topic has", cfg: DebeziumConfig{RouteTopicReplacement: `outbox event.${routedByValue}`}, field: "RouteTopicReplacement", want: "contains ' '"},
		{name: "an escaped dollar", cfg: DebeziumConfig{RouteTopicReplacement: `\$${routedByValue}`}, field: "RouteTopicReplacement", want: "contains '$'"},
		{name: "an empty placement", cfg: DebeziumConfig{AdditionalFields: []AdditionalField{{Field: "a"}}}, field: "AdditionalFields[0].Placement", want: `got ""`},
		{name: "a bad value converter", cfg: DebeziumConfig{ValueConverter: "avro"}, field: "ValueConverter", want: `got "avro"`},
		{
			name:  "envelope fields with the string converter",
			cfg:   DebeziumConfig{AdditionalFields: []AdditionalField{{Field: "a", Placement: PlacementEnvelope}}},
			field: "ValueConverter", want: "must be json (the JSON converter) with envelope fields",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if _, err := newDebezium(tt.cfg); err != nil {
					t.Fatalf("newDebezium: %v", err)
				}
				return
			}
			got := dbzConfigErrors(t, err)
			if len(got) != 1 || !strings.Contains(got[tt.field], tt.want) {
				t.Errorf("errors %q, want one on %s containing %q", got, tt.field, tt.want)
			}
			if _, err := newDebezium(tt.cfg); err == nil {
				t.Error("newDebezium accepted the config")
			}
		})
	}
}

// FuzzDebeziumExpansion: expansion never panics; an expanded payload is a
// JSON object, a kept one a JSON string, and the record's value valid
// JSON whenever there is a record; and Jackson's reader takes whatever
// JSON Go's takes, within Jackson's limits.
func FuzzDebeziumExpansion(f *testing.F) {
	for _, seed := range []string{
		dbzPayload, `{}`, `[]`, `[1]`, `{"a":[{"b":1},{"c":[null,{}]}]}`, `{"a":1e400,"b":-0.0}`,
		`{"s":"\ud800\u001f😀"}`, `{"a":[[1],["x"]]}`, `{"":null}`, `{"a":01}`, ` {}`, `{"a":1} trailing`,
		`{"n":123456789012345678901234567890}`, `{"xs":[1,2.5]}`,
	} {
		f.Add([]byte(seed))
	}
	header := []AdditionalField{{Field: "flag", Placement: PlacementHeader}}
	envelope := []AdditionalField{{Field: "event_type", Placement: PlacementEnvelope}}
	var encoders []*debezium
	for _, fields := range [][]AdditionalField{header, envelope} {
		d, err := newDebezium(DebeziumConfig{ValueConverter: ConverterJSON, ExpandJSONPayload: true, AdditionalFields: fields})
		if err != nil {
			f.Fatal(err)
		}
		encoders = append(encoders, d)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		x, err := expandJSONPayload(payload)
		switch {
		case err != nil:
		case x.JSON != nil:
			if !json.Valid(x.JSON) || x.JSON[0] != '{' {
				t.Fatalf("expanded %q to %q, not a JSON object", payload, x.JSON)
			}
		case x.Kept == "":
			t.Fatalf("%q neither expanded nor kept", payload)
		}
		e := dbzEvent()
		e.Payload = payload
		for _, d := range encoders {
			if rec, err := d.encode(e); err == nil && !json.Valid(rec.Value) {
				t.Fatalf("value %q of payload %q is not valid JSON", rec.Value, payload)
			}
		}
		if len(payload) > 0 && len(payload) < 1000 && (payload[0] == '{' || payload[0] == '[') && json.Valid(payload) {
			if _, err := parseJacksonTree(payload); err != nil {
				t.Fatalf("Jackson's reader refuses %q, which Go reads: %v", payload, err)
			}
		}
	})
}

// TestDebeziumRecordWhole: one record, every part of it, as the
// comparison with a real connector sees it.
func TestDebeziumRecordWhole(t *testing.T) {
	rec, err := dbzEncode(t, DebeziumConfig{
		AdditionalFields: []AdditionalField{
			{Field: "event_type", Placement: PlacementHeader, Alias: "eventType"},
			{Field: "aggregate_seq", Placement: PlacementEnvelope, Alias: "seq"},
		},
		ExpandJSONPayload: true, KeyConverter: ConverterJSON, ValueConverter: ConverterJSON, Timestamp: true,
	}, dbzEvent())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %s %v %d", rec.Topic, rec.Key, rec.Value, rec.Headers, rec.Timestamp.UnixMilli())
	want := `outbox.event.order "order-42" {"payload":{"orderId":42,"total":12.5,"lines":[{"sku":"A-1","qty":2}]},"seq":7} ` +
		fmt.Sprint([]kgo.RecordHeader{
			{Key: "id", Value: []byte("0b6a1d6e-3f0c-4a8e-9a57-6f1d2c3b4a59")},
			{Key: "eventType", Value: []byte("OrderCreated")},
		}) + " 1767323045678"
	if got != want {
		t.Errorf("record =\n%s\nwant\n%s", got, want)
	}
}
