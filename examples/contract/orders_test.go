package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
)

// TestValidateSKU: a SKU is 1 to 64 characters (not bytes: the SKU columns
// are VARCHAR(64) in utf8mb4), not blank, without control characters or
// invalid UTF-8. The orders API, the inventory consumer and the warehouse
// all use this one definition.
func TestValidateSKU(t *testing.T) {
	tests := []struct {
		name string
		sku  string
		ok   bool
	}{
		{"plain", "SKU-1", true},
		{"64 ASCII characters", strings.Repeat("S", 64), true},
		{"64 emoji (256 bytes)", strings.Repeat("📦", 64), true},
		{"64 accented letters", strings.Repeat("é", 64), true},
		{"65 ASCII characters", strings.Repeat("S", 65), false},
		{"65 emoji", strings.Repeat("📦", 65), false},
		{"empty", "", false},
		{"blank", "   ", false},
		{"control character", "A\x00B", false},
		{"newline", "A\nB", false},
		{"invalid UTF-8", "A\xffB", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := contract.ValidateSKU(tt.sku)
			if (err == nil) != tt.ok {
				t.Errorf("ValidateSKU(%q) = %v, want ok %v", tt.sku, err, tt.ok)
			}
		})
	}
}

// TestMultiByteSKUDecodes: an order.created whose SKU is 64 emoji (256
// bytes) is a valid event for every consumer; 65 emoji is not.
func TestMultiByteSKUDecodes(t *testing.T) {
	event := func(sku string) []byte {
		return []byte(`{"event_id":"0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f","type":"order.created","version":1,` +
			`"occurred_at":"2026-09-26T10:12:30.123456+08:00","data":{"order_id":7,"customer_id":42,` +
			`"items":[{"sku":"` + sku + `","quantity":1,"unit_price":"9.99"}],"total_amount":"9.99"}}`)
	}
	reg := contract.NewRegistry()
	ev, err := reg.Decode(event(strings.Repeat("📦", contract.SKUMaxLen)))
	if err != nil {
		t.Fatalf("64-emoji SKU: %v", err)
	}
	if p, _ := envelope.PayloadAs[contract.OrderCreatedV1](ev); p.Items[0].SKU != strings.Repeat("📦", 64) {
		t.Errorf("SKU decoded as %q", p.Items[0].SKU)
	}
	_, err = reg.Decode(event(strings.Repeat("📦", contract.SKUMaxLen+1)))
	if !errors.Is(err, contract.ErrInvalidPayload) || envelope.ErrorClass(err) != envelope.ClassMalformed {
		t.Errorf("65-emoji SKU: %v, want a malformed payload", err)
	}
}
