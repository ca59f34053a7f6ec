package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/examples/orders/api"
)

// TestBadRequests: every malformed or invalid POST /orders is answered with
// its status, error code and field, and writes no row in any table.
func TestBadRequests(t *testing.T) {
	s := newService(t, api.Config{AllowRollbackHeader: true})
	item := `{"sku":"SKU-1","quantity":1,"unit_price":"1.00"}`
	withItem := func(it string) string { return `{"customer_id":42,"items":[` + it + `]}` }
	items := func(n int) string { return `{"customer_id":42,"items":[` + strings.Repeat(item+",", n-1) + item + `]}` }

	tests := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    string
		field   string
	}{
		{name: "empty body", body: "", status: 400, code: api.CodeMalformedJSON},
		{name: "not json", body: "hello", status: 400, code: api.CodeMalformedJSON},
		{name: "truncated json", body: `{"customer_id":42,`, status: 400, code: api.CodeMalformedJSON},
		{name: "array instead of object", body: `[]`, status: 400, code: api.CodeMalformedJSON},
		{name: "trailing object", body: validOrder + validOrder, status: 400, code: api.CodeMalformedJSON},
		{name: "trailing garbage", body: validOrder + " x", status: 400, code: api.CodeMalformedJSON},
		{name: "unknown field", body: `{"customer_id":42,"coupon":"FREE","items":[` + item + `]}`, status: 400, code: api.CodeUnknownField, field: "coupon"},
		{name: "unknown item field", body: withItem(`{"sku":"A","quantity":1,"unit_price":"1.00","colour":"red"}`), status: 400, code: api.CodeUnknownField, field: "colour"},
		{name: "customer_id missing", body: `{"items":[` + item + `]}`, status: 400, code: api.CodeMissingValue, field: "customer_id"},
		{name: "customer_id null", body: `{"customer_id":null,"items":[` + item + `]}`, status: 400, code: api.CodeMissingValue, field: "customer_id"},
		{name: "customer_id zero", body: `{"customer_id":0,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id negative", body: `{"customer_id":-5,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id string", body: `{"customer_id":"42","items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id fraction", body: `{"customer_id":42.5,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id exponent", body: `{"customer_id":4e1,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id overflows int64", body: `{"customer_id":9223372036854775808,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id above 2^53-1", body: `{"customer_id":9007199254740992,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id int64 max", body: `{"customer_id":9223372036854775807,"items":[` + item + `]}`, status: 400, code: api.CodeInvalidValue, field: "customer_id"},
		{name: "customer_id twice", body: `{"customer_id":42,"customer_id":43,"items":[` + item + `]}`, status: 400, code: api.CodeDuplicateField, field: "customer_id"},
		{name: "customer_id twice, other case", body: `{"customer_id":42,"Customer_ID":43,"items":[` + item + `]}`, status: 400, code: api.CodeDuplicateField, field: "Customer_ID"},
		{name: "items twice", body: `{"customer_id":42,"items":[` + item + `],"items":[` + item + `]}`, status: 400, code: api.CodeDuplicateField, field: "items"},
		{name: "item key twice", body: withItem(`{"sku":"A","quantity":1,"unit_price":"1.00","sku":"B"}`), status: 400, code: api.CodeDuplicateField, field: "items[0].sku"},
		{name: "second item key twice", body: withItem(item + `,{"sku":"A","quantity":1,"quantity":2,"unit_price":"1.00"}`), status: 400, code: api.CodeDuplicateField, field: "items[1].quantity"},
		{name: "items missing", body: `{"customer_id":42}`, status: 400, code: api.CodeMissingValue, field: "items"},
		{name: "items null", body: `{"customer_id":42,"items":null}`, status: 400, code: api.CodeMissingValue, field: "items"},
		{name: "items empty", body: `{"customer_id":42,"items":[]}`, status: 400, code: api.CodeMissingValue, field: "items"},
		{name: "items not an array", body: `{"customer_id":42,"items":{}}`, status: 400, code: api.CodeInvalidValue, field: "items"},
		{name: "101 items", body: items(api.ItemsMax + 1), status: 400, code: api.CodeInvalidValue, field: "items"},
		{name: "item null", body: withItem(`null`), status: 400, code: api.CodeMissingValue, field: "items[0].sku"},
		{name: "sku missing", body: withItem(`{"quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeMissingValue, field: "items[0].sku"},
		{name: "sku empty", body: withItem(`{"sku":"","quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeMissingValue, field: "items[0].sku"},
		{name: "sku blank", body: withItem(`{"sku":"  ","quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeMissingValue, field: "items[0].sku"},
		{name: "sku number", body: withItem(`{"sku":7,"quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].sku"},
		{name: "sku too long", body: withItem(`{"sku":"` + strings.Repeat("S", api.SKUMaxLen+1) + `","quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].sku"},
		{name: "sku control character", body: withItem(`{"sku":"A\u0000B","quantity":1,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].sku"},
		{name: "quantity missing", body: withItem(`{"sku":"A","unit_price":"1.00"}`), status: 400, code: api.CodeMissingValue, field: "items[0].quantity"},
		{name: "quantity zero", body: withItem(`{"sku":"A","quantity":0,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
		{name: "quantity negative", body: withItem(`{"sku":"A","quantity":-1,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
		{name: "quantity absurd", body: withItem(`{"sku":"A","quantity":10001,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
		{name: "quantity fraction", body: withItem(`{"sku":"A","quantity":1.5,"unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
		{name: "quantity string", body: withItem(`{"sku":"A","quantity":"2","unit_price":"1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
		{name: "price missing", body: withItem(`{"sku":"A","quantity":1}`), status: 400, code: api.CodeMissingValue, field: "items[0].unit_price"},
		{name: "price as number", body: withItem(`{"sku":"A","quantity":1,"unit_price":9.99}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price negative", body: withItem(`{"sku":"A","quantity":1,"unit_price":"-1.00"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price three decimals", body: withItem(`{"sku":"A","quantity":1,"unit_price":"9.999"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price malformed", body: withItem(`{"sku":"A","quantity":1,"unit_price":"9,99"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price exponent", body: withItem(`{"sku":"A","quantity":1,"unit_price":"1e2"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price empty", body: withItem(`{"sku":"A","quantity":1,"unit_price":""}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price leading zero", body: withItem(`{"sku":"A","quantity":1,"unit_price":"09.99"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "price above maximum", body: withItem(`{"sku":"A","quantity":1,"unit_price":"1000000.01"}`), status: 400, code: api.CodeInvalidValue, field: "items[0].unit_price"},
		{name: "error names the item", body: `{"customer_id":42,"items":[` + item + `,{"sku":"B","quantity":1,"unit_price":"x"}]}`, status: 400, code: api.CodeInvalidValue, field: "items[1].unit_price"},
		{name: "body over 64 KiB", body: `{"customer_id":42,"items":[` + item + `],"pad":"` + strings.Repeat("x", api.RequestBodyMaxBytes) + `"}`, status: 413, code: api.CodeBodyTooLarge},
		{name: "content type not json", body: validOrder, headers: []string{"Content-Type", "text/plain"}, status: 415, code: api.CodeUnsupportedMediaType, field: "Content-Type"},
		{name: "idempotency key with space", body: validOrder, headers: []string{"Idempotency-Key", "a b"}, status: 400, code: api.CodeInvalidValue, field: "Idempotency-Key"},
		{name: "idempotency key too long", body: validOrder, headers: []string{"Idempotency-Key", strings.Repeat("k", api.IdempotencyKeyMaxLen+1)}, status: 400, code: api.CodeInvalidValue, field: "Idempotency-Key"},
		{name: "invalid body with rollback header", body: withItem(`{"sku":"A","quantity":0,"unit_price":"1.00"}`), headers: []string{api.RollbackHeader, "1"}, status: 400, code: api.CodeInvalidValue, field: "items[0].quantity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.rowCounts()
			resp := s.do("POST", "/orders", tt.body, tt.headers...)
			if resp.status != tt.status {
				t.Fatalf("%d %s, want %d", resp.status, resp.body, tt.status)
			}
			d := resp.errorDetail(t)
			if d.Code != tt.code || d.Field != tt.field || d.Message == "" {
				t.Errorf("error %+v, want code %q field %q and a message", d, tt.code, tt.field)
			}
			s.assertNoRowsWritten(before)
		})
	}
	// The boundaries themselves are accepted.
	edge := fmt.Sprintf(`{"customer_id":9007199254740991,"items":[{"sku":"%s","quantity":%d,"unit_price":"%s"}]}`,
		strings.Repeat("S", api.SKUMaxLen), api.QuantityMax, api.UnitPriceMax)
	if c := s.do("POST", "/orders", edge).created(t); c.TotalAmount != "10000000000.00" {
		t.Errorf("edge order total %s", c.TotalAmount)
	}
	if c := s.do("POST", "/orders", items(api.ItemsMax)).created(t); c.TotalAmount != "100.00" {
		t.Errorf("100-item order total %s", c.TotalAmount)
	}
	if resp := s.do("POST", "/orders", validOrder, "Content-Type", "application/json; charset=utf-8"); resp.status != http.StatusCreated {
		t.Errorf("charset parameter refused: %d %s", resp.status, resp.body)
	}
}
