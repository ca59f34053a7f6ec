package envelope_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
)

var update = flag.Bool("update", false, "rewrite envelope/testdata golden files (fields may only be added)")

// contractCase is one event type and version some example emits, with a
// canonical value of its data.
type contractCase struct {
	golden  string // file under testdata
	typ     string
	version uint16
	data    any
}

func contractCases() []contractCase {
	items := []contract.OrderItem{{SKU: "SKU-1", Quantity: 2, UnitPrice: "9.99"}}
	return []contractCase{
		{"order.created.v1.json", contract.TypeOrderCreated, 1, contract.OrderCreatedV1{
			OrderID: 9182, CustomerID: 42, Items: items, TotalAmount: "19.98",
		}},
		{"order.cancelled.v1.json", contract.TypeOrderCancelled, 1, contract.OrderCancelledV1{
			OrderID: 9182, CustomerID: 42, Items: items, TotalAmount: "19.98",
		}},
	}
}

func canonicalEnvelope(t *testing.T, c contractCase) []byte {
	t.Helper()
	data, err := json.Marshal(c.data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := envelope.Encode(envelope.Envelope{
		EventID:    "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f",
		Type:       c.typ,
		Version:    c.version,
		OccurredAt: time.Date(2026, 9, 26, 2, 12, 30, 123456000, time.UTC),
		Data:       data,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// TestContractGolden pins the JSON of every event type and version the
// examples exchange. A Go type that renames or removes a field no longer
// produces the golden JSON, and no longer accepts it strictly; -update
// refuses to drop a field from a golden file, so the contract only grows.
func TestContractGolden(t *testing.T) {
	reg := contract.NewRegistry()
	for _, c := range contractCases() {
		t.Run(c.golden, func(t *testing.T) {
			path := filepath.Join("testdata", c.golden)
			got := canonicalEnvelope(t, c)
			want, err := os.ReadFile(path)
			if err != nil && !(*update && os.IsNotExist(err)) {
				t.Fatalf("read golden: %v (run go test ./envelope -run TestContractGolden -update to create it)", err)
			}
			if *update {
				if want != nil {
					if missing := missingFields(t, want, got); len(missing) > 0 {
						t.Fatalf("refusing to update %s: fields %v would disappear; fields are only ever added (make a new version instead)", path, missing)
					}
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s v%d no longer encodes to %s\n got: %s\nwant: %s\nfields missing now: %v",
					c.typ, c.version, path, got, want, missingFields(t, want, got))
			}

			// The golden JSON decodes strictly into the Go types: a field
			// the type lost is an error here.
			var env struct {
				envelope.Envelope
				Data json.RawMessage `json:"data"`
			}
			strict(t, want, &env)
			ptr := reflect.New(reflect.TypeOf(c.data))
			strict(t, env.Data, ptr.Interface())
			if !reflect.DeepEqual(ptr.Elem().Interface(), c.data) {
				t.Errorf("golden data decodes to %+v, want %+v", ptr.Elem().Interface(), c.data)
			}

			// And the consumer's registry reads it.
			ev, err := reg.Decode(want)
			if err != nil {
				t.Fatalf("registry: %v", err)
			}
			if !reflect.DeepEqual(ev.Payload, c.data) {
				t.Errorf("registry payload %+v, want %+v", ev.Payload, c.data)
			}
		})
	}
}

// TestContractProducerSample decodes the data exactly as the orders example
// writes it into its outbox (the producer's own serialization, not ours).
func TestContractProducerSample(t *testing.T) {
	reg := contract.NewRegistry()
	const data = `{"order_id":7,"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}],"total_amount":"19.98"}`
	for _, typ := range []string{contract.TypeOrderCreated, contract.TypeOrderCancelled} {
		b := []byte(`{"event_id":"0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f","type":"` + typ +
			`","version":1,"occurred_at":"2026-09-26T10:12:30.123456+08:00","data":` + data + `}`)
		ev, err := reg.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		items := []contract.OrderItem{{SKU: "SKU-1", Quantity: 2, UnitPrice: "9.99"}}
		var want any = contract.OrderCreatedV1{OrderID: 7, CustomerID: 42, Items: items, TotalAmount: "19.98"}
		if typ == contract.TypeOrderCancelled {
			want = contract.OrderCancelledV1{OrderID: 7, CustomerID: 42, Items: items, TotalAmount: "19.98"}
		}
		if !reflect.DeepEqual(ev.Payload, want) {
			t.Errorf("%s: payload %+v, want %+v", typ, ev.Payload, want)
		}
	}
}

func strict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("strict decode into %T: %v (a field was removed or renamed)", v, err)
	}
}

// missingFields returns the JSON paths present in old but absent in new.
func missingFields(t *testing.T, old, new []byte) []string {
	t.Helper()
	var o, n any
	if err := json.Unmarshal(old, &o); err != nil {
		t.Fatalf("golden is not JSON: %v", err)
	}
	if err := json.Unmarshal(new, &n); err != nil {
		t.Fatal(err)
	}
	newPaths := fieldPaths(n, "")
	var missing []string
	for _, p := range fieldPaths(o, "") {
		if !slices.Contains(newPaths, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// fieldPaths lists the object keys of v as dotted paths; array elements
// share the path "name[]".
func fieldPaths(v any, prefix string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := strings.TrimPrefix(prefix+"."+k, ".")
			out = append(out, p)
			out = append(out, fieldPaths(child, p)...)
		}
	case []any:
		for _, child := range x {
			for _, p := range fieldPaths(child, prefix+"[]") {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestMissingFields checks the add-only guard itself.
func TestMissingFields(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"same", `{"a":1,"b":{"c":2}}`, `{"a":1,"b":{"c":2}}`, nil},
		{"added", `{"a":1}`, `{"a":1,"z":2}`, nil},
		{"removed", `{"a":1,"b":2}`, `{"a":1}`, []string{"b"}},
		{"renamed nested", `{"d":{"items":[{"sku":"x"}]}}`, `{"d":{"items":[{"code":"x"}]}}`, []string{"d.items[].sku"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := missingFields(t, []byte(tt.old), []byte(tt.new))
			if !slices.Equal(got, tt.want) {
				t.Errorf("missingFields = %v, want %v", got, tt.want)
			}
		})
	}
}
