package connector

import (
	"reflect"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/record"
)

// TestParse: java.util.Properties' syntax and Kafka Connect's JSON forms.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Properties
	}{
		{"key=value, key: value, key value", "a=1\nb: 2\nc 3\n", Properties{"a": "1", "b": "2", "c": "3"}},
		{"comments and blank lines", "# x\n! y\n\n   \na = 1 \n", Properties{"a": "1 "}},
		{"continued lines", "list=a,\\\n    b,\\\n    c\n", Properties{"list": "a,b,c"}},
		{"an escaped backslash does not continue", "path=C:\\\\\nnext=1\n", Properties{"path": `C:\`, "next": "1"}},
		{"escapes in keys and values", "a\\=b=c\\:d\\te\\u00e9\n", Properties{"a=b": "c:d\te\u00e9"}},
		{"the replacement's dollar is kept", "r=outbox.event.${routedByValue}\n", Properties{"r": "outbox.event.${routedByValue}"}},
		{"a key with no value", "a\n", Properties{"a": ""}},
		{"no final newline", "a=1", Properties{"a": "1"}},
		{"JSON object", `{"a": "1", "b": true, "c": 2}`, Properties{"a": "1", "b": "true", "c": "2"}},
		{"JSON as the REST API takes it", ` {"name": "x", "config": {"a": "1"}}`, Properties{"a": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`{"a": [1]}`, `{"a": `, "a=\\u12", "\xff=1"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}

// connectorConfig is a Debezium outbox connector's configuration as its
// documentation writes it.
const connectorConfig = `
connector.class=io.debezium.connector.mariadb.MariaDbConnector
database.hostname=db.example
table.include.list=inventory\.outbox
transforms=unwrap,outbox
transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState
transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
transforms.outbox.table.field.event.key=aggregate
transforms.outbox.route.by.field=kind
transforms.outbox.table.field.event.timestamp=created
transforms.outbox.table.fields.additional.placement=type:header:eventType,tenant:envelope,type:envelope:kind
transforms.outbox.table.expand.json.payload=true
transforms.outbox.table.op.invalid.behavior=warn
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
`

// TestInterpret: what a connector's configuration means to herald.
func TestInterpret(t *testing.T) {
	props, err := Parse([]byte(connectorConfig))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Interpret(props)
	if err != nil {
		t.Fatal(err)
	}
	wantMapping := migrations.Mapping{Table: "outbox", ID: "id", AggregateType: "kind", AggregateID: "aggregate", EventType: "type",
		Payload: "payload", Timestamp: "created", Fields: []string{"type", "tenant"}}
	if !reflect.DeepEqual(s.Mapping, wantMapping) {
		t.Errorf("mapping %+v\nwant    %+v", s.Mapping, wantMapping)
	}
	wantRouter := record.DebeziumConfig{RouteByField: "aggregate_type", ExpandJSONPayload: true, Timestamp: true,
		KeyConverter: record.ConverterString, ValueConverter: record.ConverterJSON,
		AdditionalFields: []record.AdditionalField{
			{Field: "type", Placement: record.PlacementHeader, Alias: "eventType"},
			{Field: "tenant", Placement: record.PlacementEnvelope},
			{Field: "type", Placement: record.PlacementEnvelope, Alias: "kind"},
		}}
	if !reflect.DeepEqual(s.Debezium, wantRouter) {
		t.Errorf("router %+v\nwant   %+v", s.Debezium, wantRouter)
	}
	if strings.Join(s.Ignored, ",") != "transforms.outbox.table.op.invalid.behavior" {
		t.Errorf("ignored %v", s.Ignored)
	}

	// Bare router keys (a file of herald's own) and herald's keys.
	s, err = Interpret(Properties{"herald.table": "events", "table.field.event.payload": "body",
		"herald.field.event.headers": "hdrs", "herald.value.converter": "json"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mapping.Table != "events" || s.Mapping.Payload != "body" || s.Mapping.Headers != "hdrs" ||
		s.Mapping.AggregateType != "aggregatetype" || s.Debezium.ValueConverter != record.ConverterJSON {
		t.Errorf("herald's keys: %+v", s)
	}
	// No table: the settings are for herald's own outbox_events.
	if s, err := Interpret(Properties{}); err != nil || s.Mapping.Table != "" || s.Debezium.KeyConverter != record.ConverterString {
		t.Errorf("no table: %+v, %v", s, err)
	}
}

// TestInterpretRefuses: every property herald cannot honour, at once, each
// named.
func TestInterpretRefuses(t *testing.T) {
	props := Properties{
		"table.include.list": "inventory.outbox,inventory.other",
		"transforms":         "o",
		"transforms.o.type":  "io.debezium.transforms.outbox.EventRouter",
		"transforms.o.table.fields.additional.placement": "tenant:partition,type,kind:body",
		"transforms.o.route.tombstone.on.empty.payload":  "true",
		"transforms.o.table.json.payload.null.behavior":  "optional_bytes",
		"transforms.o.table.expand.json.payload":         "yes please",
		"key.converter":                                  "io.confluent.connect.avro.AvroConverter",
		"value.converter":                                "org.apache.kafka.connect.json.JsonConverter",
	}
	_, err := Interpret(props)
	if err == nil {
		t.Fatal("took it")
	}
	for _, want := range []string{
		"table.include.list: \"inventory.outbox,inventory.other\" names 2 tables",
		`transforms.o.table.fields.additional.placement: "tenant:partition": herald partitions by key only`,
		`"type": want column:placement[:alias]`,
		`"kind:body": placement must be header or envelope`,
		"transforms.o.route.tombstone.on.empty.payload: herald supports only false",
		"transforms.o.table.json.payload.null.behavior: herald supports only ignore",
		`transforms.o.table.expand.json.payload: want true or false, got "yes please"`,
		"key.converter: herald writes records as",
		"value.converter: JsonConverter with schemas.enable=true (its default)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if _, err := Interpret(Properties{"table.include.list": "inventory.out.*"}); err == nil || !strings.Contains(err.Error(), "is a pattern") {
		t.Errorf("a pattern: %v", err)
	}
}

// TestSet: --mapping-set overrides, in order.
func TestSet(t *testing.T) {
	p := Properties{"a": "1"}
	if err := p.Set([]string{"a=2", "b=x=y", "a=3"}); err != nil {
		t.Fatal(err)
	}
	if p["a"] != "3" || p["b"] != "x=y" {
		t.Errorf("%v", p)
	}
	if err := p.Set([]string{"novalue"}); err == nil {
		t.Error("took a setting without =")
	}
}
