package api

import (
	"errors"
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// decimalMax152 is the largest value of a DECIMAL(15,2) column
// (orders.total_amount).
var decimalMax152, _ = new(big.Rat).SetString("9999999999999.99")

var moneyPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.[0-9]{2}$`)

// FuzzDecodeCreateOrder: whatever the bytes, the decoder never panics and
// either refuses them with a 400 or 413 naming an error code, or accepts an
// order that the database can store and whose total is the exact sum of its
// lines (recomputed here with math/big, independently of the decimal
// library). `go test` runs the seeds below.
func FuzzDecodeCreateOrder(f *testing.F) {
	for _, seed := range []string{
		`{"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":10000,"unit_price":"1000000.00"},{"sku":"B","quantity":1,"unit_price":"0.5"}]}`,
		`{"customer_id":9007199254740991,"items":[{"sku":"é","quantity":1,"unit_price":"0"}]}`,
		`{"customer_id":9007199254740992,"items":[{"sku":"é","quantity":1,"unit_price":"0"}]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":1,"unit_price":"1.00","SKU":"B"}]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":1,"unit_price":9.99}]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":1e2,"unit_price":"1"}]}`,
		`{"customer_id":-1,"items":[]}`,
		`{"customer_id":"42","items":null}`,
		`{"customer_id":42,"items":[null]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":1,"unit_price":"1.00","x":1}]}`,
		`{"customer_id":42,"items":[{"sku":"A","quantity":1,"unit_price":"1.00"}]} {}`,
		`{"CUSTOMER_ID":42,"Items":[{"SKU":"A","Quantity":1,"Unit_Price":"1.00"}]}`,
		`{"customer_id":42,"customer_id":43,"items":[{"sku":"A","quantity":1,"unit_price":"1.00"}]}`,
		`[1,2,3]`, `"x"`, `null`, `{`, ``, "\xff\xfe", `{"items":[{"sku":"\u0000"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeCreateOrder(http.MaxBytesReader(nil, readCloser{strings.NewReader(string(body))}, RequestBodyMaxBytes))
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || (ae.status != 400 && ae.status != 413) || ae.detail.Code == "" || ae.detail.Message == "" {
				t.Fatalf("refused with %#v, want a 400/413 apiError with code and message", err)
			}
			return
		}
		if req.customerID <= 0 || req.customerID > CustomerIDMax || len(req.items) == 0 || len(req.items) > ItemsMax {
			t.Fatalf("accepted customer %d with %d items", req.customerID, len(req.items))
		}
		want := new(big.Rat)
		for i, it := range req.items {
			if strings.TrimSpace(it.sku) == "" || len([]rune(it.sku)) > SKUMaxLen {
				t.Fatalf("item %d: accepted sku %q", i, it.sku)
			}
			if it.quantity < 1 || it.quantity > QuantityMax {
				t.Fatalf("item %d: accepted quantity %d", i, it.quantity)
			}
			price, ok := new(big.Rat).SetString(money(it.unitPrice))
			if !ok || price.Sign() < 0 || it.unitPrice.Exponent() < -2 || !moneyPattern.MatchString(money(it.unitPrice)) {
				t.Fatalf("item %d: accepted unit price %s", i, it.unitPrice)
			}
			want.Add(want, new(big.Rat).Mul(price, new(big.Rat).SetInt64(it.quantity)))
		}
		total := money(totalOf(req.items))
		got, ok := new(big.Rat).SetString(total)
		if !ok || !moneyPattern.MatchString(total) || got.Cmp(want) != 0 {
			t.Fatalf("total %s, want %s", total, want.FloatString(2))
		}
		if got.Cmp(decimalMax152) > 0 {
			t.Fatalf("total %s does not fit orders.total_amount DECIMAL(15,2)", total)
		}
		if len(req.canonicalHash()) != 32 {
			t.Fatal("canonical hash is not SHA-256")
		}
	})
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
