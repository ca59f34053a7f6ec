package connector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/record"
)

// Properties are a connector's configuration, key to value.
type Properties map[string]string

// ReadFile reads a properties or JSON file (told apart by its first
// character other than white space: { starts JSON).
func ReadFile(path string) (Properties, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// Parse reads a connector's configuration: Kafka Connect's JSON (an
// object of strings, or {"name": ..., "config": {...}} as the REST API
// takes it) or a Java properties file.
func Parse(b []byte) (Properties, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return parseJSON(t)
	}
	return parseProperties(string(b))
}

func parseJSON(b []byte) (Properties, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if inner, ok := top["config"]; ok {
		top = nil
		if err := json.Unmarshal(inner, &top); err != nil {
			return nil, fmt.Errorf("config: not a JSON object: %w", err)
		}
	}
	props := Properties{}
	for k, raw := range top {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			// Connect's REST API takes strings; a number or a boolean
			// is taken as written.
			var v any
			if json.Unmarshal(raw, &v) != nil {
				return nil, fmt.Errorf("%s: not a JSON value", k)
			}
			switch v.(type) {
			case bool, float64:
				s = strings.TrimSpace(string(raw))
			default:
				return nil, fmt.Errorf("%s: want a string, got %s", k, raw)
			}
		}
		props[k] = s
	}
	return props, nil
}

// parseProperties reads java.util.Properties' format: key=value, key:value
// or key value lines; # and ! comments; a backslash at a line's end
// continues it; \t \n \r \f \uXXXX and escaped characters in keys and
// values.
func parseProperties(text string) (Properties, error) {
	props := Properties{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var logical strings.Builder
	lineNo, start := 0, 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if logical.Len() == 0 {
			line = strings.TrimLeft(line, " \t\f")
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = lineNo
		} else {
			line = strings.TrimLeft(line, " \t\f")
		}
		if continued(line) {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		k, v, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		props[k] = v
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical.Len() > 0 {
		k, v, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		props[k] = v
	}
	return props, nil
}

// continued reports whether line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at its first unescaped =, : or white
// space, and unescapes both sides.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key := line[:end]
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	k, err := unescape(key)
	if err != nil {
		return "", "", err
	}
	v, err := unescape(rest)
	return k, v, err
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 >= len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// eventRouterType is the Outbox Event Router's class.
const eventRouterType = "io.debezium.transforms.outbox.EventRouter"

// routerKeys are the Outbox Event Router's properties herald reads, by
// their name without a transforms.<name>. prefix.
var routerKeys = []string{
	"table.field.event.id", "table.field.event.key", "table.field.event.type", "table.field.event.payload",
	"table.field.event.timestamp", "table.field.event.schema.version", "route.by.field", "route.topic.regex",
	"route.topic.replacement", "table.fields.additional.placement", "table.fields.additional.error.on.missing",
	"table.expand.json.payload", "table.json.payload.null.behavior", "route.tombstone.on.empty.payload",
	"table.op.invalid.behavior",
}

// Settings is what a connector's configuration means to herald.
type Settings struct {
	// Mapping is the foreign table and which of its columns hold what;
	// its Table is "" when the configuration names none (the debezium
	// format's settings for herald's own outbox_events).
	Mapping migrations.Mapping
	// Debezium is the debezium record format's settings for it: fields
	// named as the copy stores them (the mapped ones as herald's columns).
	Debezium record.DebeziumConfig
	// Ignored lists the properties herald read and does not act on (they
	// change nothing herald sends), sorted.
	Ignored []string
	// property names, per migrations.Mapping field, the property that
	// sets it, as the configuration writes it (with its transforms.<name>.
	// prefix).
	property map[string]string
}

// NameProperties returns err with each problem of a migrations.Mapping
// field (as Validate, CheckMapping and InstallMapping report them, each
// naming its field) named by the connector property that sets the
// field, so that a message says
// transforms.outbox.table.field.event.timestamp where the mapping says
// Timestamp. Other errors are returned as they are.
func (s Settings) NameProperties(err error) error {
	if err == nil {
		return nil
	}
	var fe *config.Error
	if errors.As(err, &fe) && fe == err {
		if p, ok := s.property[fe.Field]; ok {
			return &config.Error{Field: p, Msg: fe.Msg}
		}
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts := j.Unwrap()
		renamed := make([]error, len(parts))
		for i, e := range parts {
			renamed[i] = s.NameProperties(e)
		}
		return errors.Join(renamed...)
	}
	inner := errors.Unwrap(err)
	if inner == nil {
		return err
	}
	// A wrapping "context: %w": the context kept, the wrapped error named.
	prefix, ok := strings.CutSuffix(err.Error(), inner.Error())
	if !ok {
		return err
	}
	return fmt.Errorf("%s%w", prefix, s.NameProperties(inner))
}

// Interpret turns props into Settings, or reports every property herald
// cannot honour at once, each naming the property.
func Interpret(props Properties) (Settings, error) {
	router, prefix, problems := routerProperties(props)
	bad := func(key, format string, args ...any) {
		problems = append(problems, prefix+key+": "+fmt.Sprintf(format, args...))
	}
	get := func(key string) string { return strings.TrimSpace(router[key]) }

	var s Settings
	s.property = map[string]string{
		"ID": prefix + "table.field.event.id", "AggregateID": prefix + "table.field.event.key",
		"EventType": prefix + "table.field.event.type", "Payload": prefix + "table.field.event.payload",
		"AggregateType": prefix + "route.by.field", "Timestamp": prefix + "table.field.event.timestamp",
		"SchemaVersion": prefix + "table.field.event.schema.version", "Headers": "herald.field.event.headers",
		"Fields": prefix + "table.fields.additional.placement", "Table": "table.include.list",
	}
	if strings.TrimSpace(props["herald.table"]) != "" {
		s.property["Table"] = "herald.table"
	}
	m := &s.Mapping
	m.ID, m.AggregateID, m.EventType, m.Payload = get("table.field.event.id"), get("table.field.event.key"),
		get("table.field.event.type"), get("table.field.event.payload")
	m.AggregateType = get("route.by.field")
	m.Timestamp, m.SchemaVersion = get("table.field.event.timestamp"), get("table.field.event.schema.version")
	m.Headers = strings.TrimSpace(props["herald.field.event.headers"])
	*m = m.WithDefaults()
	table, err := tableOf(props)
	if err != nil {
		problems = append(problems, err.Error())
	}
	m.Table = table

	d := &s.Debezium
	d.RouteByField = record.DebeziumRouteByFieldDefault // route.by.field is the aggregate type
	d.RouteTopicRegex, d.RouteTopicReplacement = get("route.topic.regex"), get("route.topic.replacement")
	d.Timestamp = m.Timestamp != ""
	if v := get("table.expand.json.payload"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("table.expand.json.payload", "want true or false, got %q", v)
		}
		d.ExpandJSONPayload = b
	}
	// The columns herald maps, as the copy stores them: an additional
	// field that is one of them is still copied under its own name.
	if v := get("table.fields.additional.placement"); v != "" {
		for _, entry := range strings.Split(v, ",") {
			parts := strings.Split(strings.TrimSpace(entry), ":")
			if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
				bad("table.fields.additional.placement", "%q: want column:placement[:alias]", entry)
				continue
			}
			f := record.AdditionalField{Field: parts[0], Placement: record.Placement(parts[1])}
			if len(parts) == 3 {
				f.Alias = parts[2]
			}
			switch f.Placement {
			case record.PlacementHeader, record.PlacementEnvelope:
			case "partition":
				bad("table.fields.additional.placement", "%q: herald partitions by key only (placement partition is not supported)", entry)
				continue
			default:
				bad("table.fields.additional.placement", "%q: placement must be header or envelope", entry)
				continue
			}
			d.AdditionalFields = append(d.AdditionalFields, f)
			if !slices.Contains(m.Fields, f.Field) {
				m.Fields = append(m.Fields, f.Field)
			}
		}
	}
	for key, want := range map[string]string{
		"route.tombstone.on.empty.payload":         "false",
		"table.json.payload.null.behavior":         "ignore",
		"table.fields.additional.error.on.missing": "true",
	} {
		if v := get(key); v != "" && !strings.EqualFold(v, want) {
			bad(key, "herald supports only %s (the default), got %q", want, v)
		}
	}
	if d.KeyConverter, err = converterOf(props, "key"); err != nil {
		problems = append(problems, err.Error())
	}
	if d.ValueConverter, err = converterOf(props, "value"); err != nil {
		problems = append(problems, err.Error())
	}
	if m.Table != "" {
		if err := s.NameProperties(m.Validate()); err != nil {
			for _, leaf := range config.Leaves(err) {
				problems = append(problems, leaf.Error())
			}
		}
	}
	if len(problems) > 0 {
		return Settings{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	for key := range router {
		if key == "table.op.invalid.behavior" {
			s.Ignored = append(s.Ignored, prefix+key) // herald never sees an update
		}
	}
	slices.Sort(s.Ignored)
	return s, nil
}

// routerProperties returns the Outbox Event Router's properties, keys
// without their transforms.<name>. prefix, that prefix, and what keeps
// herald from reading them as Debezium would. A connector's configuration
// (one with connector.class or a transforms key) routes its records
// through the router only if transforms= declares it (transforms=outbox,
// transforms.outbox.type=...EventRouter): herald requires exactly one
// such alias, whatever it is called, and refuses keys under an alias
// transforms= does not declare, which Kafka Connect would never read. A
// file of herald's (neither key) may give the router's keys bare.
func routerProperties(props Properties) (Properties, string, []string) {
	var declared, routers, problems []string
	for _, name := range strings.Split(props["transforms"], ",") {
		if name = strings.TrimSpace(name); name != "" {
			declared = append(declared, name)
		}
	}
	for _, name := range declared {
		switch class := strings.TrimSpace(props["transforms."+name+".type"]); class {
		case eventRouterType:
			routers = append(routers, name)
		case "":
			problems = append(problems, fmt.Sprintf("transforms.%s.type: missing (transforms= declares %s; the Outbox Event Router's is %s)",
				name, name, eventRouterType))
		}
	}
	connectorForm := props["connector.class"] != ""
	var undeclared []string
	for key := range props {
		if key == "transforms" {
			connectorForm = true
		}
		alias, _, ok := strings.Cut(strings.TrimPrefix(key, "transforms."), ".")
		if !strings.HasPrefix(key, "transforms.") || !ok {
			continue
		}
		connectorForm = true
		if !slices.Contains(declared, alias) {
			undeclared = append(undeclared, key)
		}
	}
	slices.Sort(undeclared)
	for _, key := range undeclared {
		alias, _, _ := strings.Cut(strings.TrimPrefix(key, "transforms."), ".")
		problems = append(problems, fmt.Sprintf("%s: transforms= does not declare %s, so Kafka Connect never reads it (add %s to transforms=)",
			key, alias, alias))
	}
	prefix := ""
	switch {
	case len(routers) == 1:
		prefix = "transforms." + routers[0] + "."
	case len(routers) > 1:
		problems = append(problems, fmt.Sprintf("transforms: %s are each an Outbox Event Router; herald relays one table through one",
			strings.Join(routers, ", ")))
	case connectorForm:
		listed := "declares no transform"
		if len(declared) > 0 {
			listed = fmt.Sprintf("declares %s, none of type %s", strings.Join(declared, ", "), eventRouterType)
		}
		problems = append(problems, fmt.Sprintf("transforms: no Outbox Event Router: transforms= %s, so Debezium would send "+
			"this connector's change events, not its outbox's (add transforms=outbox and transforms.outbox.type=%s)",
			listed, eventRouterType))
	}
	router := Properties{}
	for _, key := range routerKeys {
		if v, ok := props[prefix+key]; ok {
			router[key] = v
		} else if v, ok := props[key]; ok && prefix != "" {
			router[key] = v
		}
	}
	return router, prefix, problems
}

// tableOf names the foreign table: herald.table, or the one entry of
// table.include.list (a regular expression Debezium matches against
// "database.table"; herald takes it as a literal name, its escaped dots
// unescaped); "" when neither is set: the settings are for herald's own
// outbox_events.
func tableOf(props Properties) (string, error) {
	if t := strings.TrimSpace(props["herald.table"]); t != "" {
		return t, nil
	}
	list := strings.TrimSpace(props["table.include.list"])
	if list == "" {
		return "", nil // herald's own outbox_events
	}
	entries := strings.Split(list, ",")
	if len(entries) != 1 {
		return "", fmt.Errorf("table.include.list: %q names %d tables; herald relays one outbox table per mapping (set herald.table)", list, len(entries))
	}
	name := strings.ReplaceAll(strings.TrimSpace(entries[0]), `\.`, ".")
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:] // the database (or schema) is herald's own
	}
	if !tableName.MatchString(name) {
		return "", fmt.Errorf("table.include.list: %q is a pattern, not one table's name (set herald.table)", list)
	}
	return name, nil
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// Kafka Connect's converter classes herald knows.
const (
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"
	jsonConverter   = "org.apache.kafka.connect.json.JsonConverter"
)

// converterOf reads <which>.converter (key or value), or herald's
// herald.<which>.converter: StringConverter is record.ConverterString,
// JsonConverter with schemas.enable=false is record.ConverterJSON; absent
// means StringConverter (the worker's converters live in its own file:
// copy them here when they are not StringConverter).
func converterOf(props Properties, which string) (record.Converter, error) {
	if v := strings.TrimSpace(props["herald."+which+".converter"]); v != "" {
		switch record.Converter(v) {
		case record.ConverterString, record.ConverterJSON:
			return record.Converter(v), nil
		}
		return "", fmt.Errorf("herald.%s.converter: want %s or %s, got %q", which, record.ConverterString, record.ConverterJSON, v)
	}
	key := which + ".converter"
	switch class := strings.TrimSpace(props[key]); class {
	case "", stringConverter:
		return record.ConverterString, nil
	case jsonConverter:
		schemas := strings.TrimSpace(props[key+".schemas.enable"])
		if b, err := strconv.ParseBool(schemas); err == nil && !b {
			return record.ConverterJSON, nil
		}
		return "", fmt.Errorf("%s: JsonConverter with schemas.enable=true (its default) wraps every %s in a schema "+
			"envelope herald does not write; set %s.schemas.enable=false (consumers then read plain JSON)", key, which, key)
	default:
		return "", fmt.Errorf("%s: herald writes records as %s or %s (schemas.enable=false) would, not %s",
			key, stringConverter, jsonConverter, class)
	}
}

// Set applies overrides, each "key=value", to props, in order.
func (props Properties) Set(overrides []string) error {
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q: want key=value", o)
		}
		props[strings.TrimSpace(k)] = v
	}
	return nil
}
