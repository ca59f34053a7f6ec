package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Debezium's table.expand.json.payload, as EventRouterDelegate.apply runs
// it (Debezium 3.5):
//
//	payloadSchema = jsonSchemaData.toConnectSchema("payload", tree) // (1)
//	payload = jsonSchemaData.toConnectData(tree, payloadSchema)     // (2)
//
// inside a try that catches any exception, logs "JSON expansion failed"
// and goes on. A failure in (1), or in parsing, leaves the payload a
// string: herald's fallback. A failure in (2) does not: the schema has
// already been replaced, so the string no longer fits it, and Kafka
// Connect refuses the record (Struct.put or JsonConverter throws) and the
// connector stops on the row. herald makes that an EncodeError.

// connectType is the Kafka Connect schema type JsonSchemaData infers.
type connectType uint8

const (
	connectString connectType = iota
	connectBoolean
	connectInt32
	connectInt64
	connectFloat64
	connectArray
	connectStruct
)

// connectSchema is the part of a Connect schema that shapes the JSON:
// its type, whether it is optional, an array's element schema, a
// struct's fields in order. Struct names are left out: JsonConverter
// without schemas never writes them, and within one array, where schemas
// are compared, they are the same path.
type connectSchema struct {
	typ      connectType
	required bool // only a merged struct is not optional
	elem     *connectSchema
	fields   []connectField
	index    map[string]int // fields by key
	// id is the same for equal schemas (ConnectSchema.equals) of one
	// payload.
	id int
}

// connectField is a field of a struct schema.
type connectField struct {
	name   []uint16
	key    string
	schema *connectSchema
}

var (
	connectStringSchema  = &connectSchema{typ: connectString, id: 1}
	connectBooleanSchema = &connectSchema{typ: connectBoolean, id: 2}
	connectInt32Schema   = &connectSchema{typ: connectInt32, id: 3}
	connectInt64Schema   = &connectSchema{typ: connectInt64, id: 4}
	connectFloat64Schema = &connectSchema{typ: connectFloat64, id: 5}
)

// errExpansionKept marks a payload Debezium keeps as a string.
var errExpansionKept = errors.New("kept as a string")

// expansion is the result of expanding a payload.
type expansion struct {
	// JSON is the payload as JsonConverter writes the expanded struct;
	// nil when Debezium keeps the payload a string.
	JSON []byte
	// Depth is JSON's nesting depth.
	Depth int
	// NullSchema is set for a top-level empty array: its schema is null,
	// so the value stays the string under no schema (JsonConverter then
	// writes it as a JSON string), and an envelope cannot hold it.
	NullSchema bool
	// Kept says why the payload stays a string ("" when expanded).
	Kept string
}

// expandJSONPayload expands payload as Debezium does. An error is a
// payload for which Debezium emits no record at all.
func expandJSONPayload(payload []byte) (expansion, error) {
	// EventRouterDelegate.parseJsonPayload: startsWith("{") or "[", with
	// no trimming; an empty payload fails on charAt(0), likewise caught.
	if len(payload) == 0 || payload[0] != '{' && payload[0] != '[' {
		return expansion{Kept: "does not start with { or ["}, nil
	}
	tree, err := parseJacksonTree(payload)
	if err != nil {
		return expansion{Kept: err.Error()}, nil
	}
	schema, err := (&schemaInferrer{ids: map[string]int{}}).infer(tree)
	if err != nil {
		return expansion{Kept: err.Error()}, nil
	}
	if tree.kind == jsonArray {
		if schema == nil {
			return expansion{NullSchema: true, Kept: "an empty top-level array has no schema"}, nil
		}
		// toConnectData makes a Struct of the document whatever it is:
		// new Struct(an array schema) throws after the schema was replaced.
		return expansion{}, errors.New("the payload is a JSON array: Debezium's JsonSchemaData makes a Struct of the " +
			"whole payload, which fails for an array after the payload's schema was already replaced, so Kafka " +
			"Connect refuses the record (the Debezium connector stops on this row)")
	}
	w := &connectWriter{}
	if err := w.value(tree, schema, 1); err != nil {
		var pe *expandPathError
		if errors.As(err, &pe) {
			return expansion{}, fmt.Errorf("the payload's value at %s %s: Debezium's JsonSchemaData gives it no "+
				"Connect value its inferred schema accepts, after the payload's schema was already replaced, so "+
				"Kafka Connect refuses the record (the Debezium connector stops on this row)", pe.path(), pe.msg)
		}
		return expansion{}, err
	}
	return expansion{JSON: w.buf, Depth: w.maxDepth}, nil
}

// schemaInferrer is JsonSchemaData.toConnectSchema with Debezium's
// defaults (table.json.payload.null.behavior=ignore, no field name
// adjustment), for one payload.
type schemaInferrer struct {
	ids map[string]int // a schema's shape to its id
}

// intern gives s the id of the schemas equal to it, a new one for a new
// shape: type, optionality, element and fields (names and schemas, in
// order).
func (in *schemaInferrer) intern(s *connectSchema) *connectSchema {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %t", s.typ, s.required)
	if s.elem != nil {
		fmt.Fprintf(&b, " [%d]", s.elem.id)
	}
	for _, f := range s.fields {
		fmt.Fprintf(&b, " %d:%s=%d", len(f.key), f.key, f.schema.id)
	}
	key := b.String()
	id, ok := in.ids[key]
	if !ok {
		id = len(in.ids) + 6 // after the scalar schemas'
		in.ids[key] = id
	}
	s.id = id
	return s
}

// infer returns n's schema. A nil schema (a null, an empty array) drops
// the member that has it. An error is an exception: the payload stays a
// string.
func (in *schemaInferrer) infer(n *jsonNode) (*connectSchema, error) {
	switch n.kind {
	case jsonString:
		return connectStringSchema, nil
	case jsonBoolean:
		return connectBooleanSchema, nil
	case jsonNumber:
		return numberSchema(n), nil
	case jsonArray:
		if len(n.elems) == 0 {
			return nil, nil
		}
		elem, err := in.inferElements(n)
		if err != nil {
			return nil, err
		}
		return in.intern(&connectSchema{typ: connectArray, elem: elem}), nil
	case jsonObject:
		s := &connectSchema{typ: connectStruct, index: map[string]int{}}
		for _, m := range n.members {
			fs, err := in.infer(m.value)
			if err != nil {
				return nil, err
			}
			if fs == nil {
				continue
			}
			if len(m.name) == 0 {
				// SchemaBuilder.field: "fieldName cannot be null."
				return nil, fmt.Errorf("%w: Kafka Connect refuses a struct field with an empty name", errExpansionKept)
			}
			if _, ok := s.index[m.key]; !ok { // hasField (readTree already merged duplicates)
				s.index[m.key] = len(s.fields)
				s.fields = append(s.fields, connectField{name: m.name, key: m.key, schema: fs})
			}
		}
		return in.intern(s), nil
	}
	return nil, nil // null
}

// numberSchema: isInt() is int32, isLong() int64, anything else (a
// double, a BigIntegerNode) float64.
func numberSchema(n *jsonNode) *connectSchema {
	switch n.num {
	case numberInt:
		return connectInt32Schema
	case numberLong:
		return connectInt64Schema
	}
	return connectFloat64Schema
}

// inferElements is toConnectSchemaWithCycles: the non-null elements must
// share a node type (and numbers a number schema), else the array is not
// homogeneous. Objects merge their schemas; any other element type takes
// the schema of the first non-null element alone.
func (in *schemaInferrer) inferElements(arr *jsonNode) (*connectSchema, error) {
	var sample *jsonNode
	var sampleSchema *connectSchema
	for _, e := range arr.elems {
		if e.kind == jsonNull {
			continue
		}
		if sample == nil {
			sample = e
		}
		if e.kind != sample.kind {
			return nil, fmt.Errorf("%w: an array is not homogeneous", errExpansionKept)
		}
		if e.kind == jsonNumber {
			if sampleSchema == nil {
				sampleSchema = numberSchema(sample)
			}
			if numberSchema(e) != sampleSchema {
				return nil, fmt.Errorf("%w: an array is not homogeneous (different number types)", errExpansionKept)
			}
		}
	}
	if sample != nil && sample.kind == jsonObject {
		return in.mergeObjects(arr)
	}
	if sample == nil {
		return nil, fmt.Errorf("%w: an array of nulls has no member schema", errExpansionKept)
	}
	s, err := in.infer(sample)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("%w: an array has an unrecognized member schema", errExpansionKept)
	}
	return s, nil
}

// mergeObjects merges the distinct schemas of arr's objects (a
// HashSet<Schema>) with mergeSchema. One distinct schema is the schema
// itself. Several are merged into a schema that copySchemaBasics makes
// without the optional flag: a required struct, so a null element fails
// Struct.put's validation.
//
// Debezium merges in the HashSet's order, which follows Schema.Type's
// identity hash code: when the objects differ in their members (or their
// members' order or types), the merged field order, and which of two
// conflicting struct schemas a field keeps, depend on the worker
// process's history. herald merges in document order: the first
// element's fields, then each new field as it first appears, a field's
// first schema winning (mergeSchema keeps the old one but for bytes,
// which the ignore null behavior never infers).
func (in *schemaInferrer) mergeObjects(arr *jsonNode) (*connectSchema, error) {
	var first *connectSchema
	merged := &connectSchema{typ: connectStruct, required: true, index: map[string]int{}}
	distinct := map[int]bool{}
	for _, e := range arr.elems {
		if e.kind != jsonObject {
			continue
		}
		s, err := in.infer(e)
		if err != nil {
			return nil, err
		}
		if distinct[s.id] {
			continue
		}
		distinct[s.id] = true
		if first == nil {
			first = s
		}
		for _, f := range s.fields {
			if _, ok := merged.index[f.key]; !ok {
				merged.index[f.key] = len(merged.fields)
				merged.fields = append(merged.fields, f)
			}
		}
	}
	if len(distinct) == 1 {
		return first, nil
	}
	return in.intern(merged), nil
}

// expandPathError is a value JsonSchemaData.toConnectData cannot convert
// to a Connect value its schema accepts, with where it is.
type expandPathError struct {
	rev []string // path segments, innermost first
	msg string
}

func (e *expandPathError) Error() string { return e.path() + " " + e.msg }

func (e *expandPathError) path() string {
	var b strings.Builder
	b.WriteString("$")
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
	}
	return b.String()
}

func (e *expandPathError) in(segment string) *expandPathError {
	e.rev = append(e.rev, segment)
	return e
}

// expandMaxBytes bounds an expanded payload. Objects in an array are each
// written with every field of the merged schema, so a payload of a few
// kilobytes can expand to gigabytes (and run Debezium's worker out of
// heap). Kafka refuses such a record long before (message.max.bytes is
// 1 MiB by default); the bound keeps one hostile payload from exhausting
// the relay's memory.
const expandMaxBytes = 64 << 20

// connectWriter converts the tree to Connect data against the inferred
// schema (toConnectData, with the validation of Struct.put) and writes it
// as JsonConverter does (convertToJson, then Jackson): a struct's fields
// in schema order, an absent or null value as null.
type connectWriter struct {
	buf      []byte
	maxDepth int
}

// value writes n under schema s at nesting depth depth (of n's own
// container, if it is one).
func (w *connectWriter) value(n *jsonNode, s *connectSchema, depth int) error {
	if n == nil || n.kind == jsonNull {
		if s.required {
			return &expandPathError{msg: "is null among objects of different members, whose merged schema " +
				"(SchemaUtil.copySchemaBasics) is not optional"}
		}
		w.buf = append(w.buf, "null"...)
		return nil
	}
	want := connectString
	switch n.kind {
	case jsonBoolean:
		want = connectBoolean
	case jsonNumber:
		switch n.num {
		case numberInt:
			want = connectInt32
		case numberLong:
			want = connectInt64
		case numberDouble:
			want = connectFloat64
		case numberBigInteger:
			// getStructFieldValue gives a BigIntegerNode's decimalValue(), a
			// BigDecimal, which no schema JsonSchemaData infers accepts.
			return &expandPathError{msg: fmt.Sprintf("is %s, an integer beyond 64 bits (a BigDecimal for a float64 schema)", n.text)}
		}
	case jsonArray:
		want = connectArray
	case jsonObject:
		want = connectStruct
	}
	if s.typ != want {
		return &expandPathError{msg: fmt.Sprintf("is %s where the schema Debezium inferred from another element "+
			"of its array says %s", nodeKindName(n), connectTypeName(s.typ))}
	}
	switch n.kind {
	case jsonString:
		w.buf = appendJacksonString(w.buf, n.str)
	case jsonBoolean:
		w.buf = strconv.AppendBool(w.buf, n.boolean)
	case jsonNumber:
		if n.num == numberDouble {
			w.buf = appendJacksonDouble(w.buf, n.double)
		} else {
			w.buf = strconv.AppendInt(w.buf, n.integer, 10)
		}
	case jsonArray:
		w.maxDepth = max(w.maxDepth, depth)
		w.buf = append(w.buf, '[')
		for i, e := range n.elems {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.value(e, s.elem, depth+1); err != nil {
				var pe *expandPathError
				if errors.As(err, &pe) {
					return pe.in("[" + strconv.Itoa(i) + "]")
				}
				return err
			}
		}
		w.buf = append(w.buf, ']')
	case jsonObject:
		w.maxDepth = max(w.maxDepth, depth)
		w.buf = append(w.buf, '{')
		for i, f := range s.fields {
			if len(w.buf) > expandMaxBytes {
				return fmt.Errorf("the payload expands to more than %d bytes (objects in an array are each written "+
					"with every member of any of them), more than Kafka takes in a record", expandMaxBytes)
			}
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.buf = appendJacksonString(w.buf, f.name)
			w.buf = append(w.buf, ':')
			if err := w.value(n.member(f.key), f.schema, depth+1); err != nil {
				var pe *expandPathError
				if errors.As(err, &pe) {
					return pe.in("." + string(javaUTF8(f.name)))
				}
				return err
			}
		}
		w.buf = append(w.buf, '}')
	}
	return nil
}

func nodeKindName(n *jsonNode) string {
	switch n.kind {
	case jsonBoolean:
		return "a boolean"
	case jsonNumber:
		switch n.num {
		case numberInt:
			return "an int32 number"
		case numberLong:
			return "an int64 number"
		}
		return "a float64 number"
	case jsonString:
		return "a string"
	case jsonArray:
		return "an array"
	case jsonObject:
		return "an object"
	}
	return "null"
}

func connectTypeName(t connectType) string {
	return [...]string{"string", "boolean", "int32", "int64", "float64", "array", "struct"}[t]
}
