package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/herald-outbox/herald/examples/contract"
)

// Limits of one POST /orders.
const (
	// RequestBodyMaxBytes is the largest request body accepted (64 KiB);
	// a larger one is answered 413.
	RequestBodyMaxBytes = 64 << 10
	// CustomerIDMax is the largest customer_id, 2^53-1: the contract
	// promises ids every JSON parser reads exactly, floats included.
	CustomerIDMax = 1<<53 - 1
	// ItemsMax is the most lines one order may have.
	ItemsMax = 100
	// QuantityMax is the largest quantity of one line.
	QuantityMax = 10_000
	// SKUMaxLen is the longest SKU, in characters (contract.SKUMaxLen).
	SKUMaxLen = contract.SKUMaxLen
	// UnitPriceMax is the highest unit price, a decimal string.
	UnitPriceMax = "1000000.00"
	// IdempotencyKeyMaxLen is the longest Idempotency-Key header value.
	IdempotencyKeyMaxLen = 255
)

var (
	unitPriceMax = decimal.RequireFromString(UnitPriceMax)
	// pricePattern: a non-negative decimal with at most two decimals, no
	// sign, exponent or leading zeros.
	pricePattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,15})(\.[0-9]{1,2})?$`)
	// integerPattern: a JSON number without fraction or exponent.
	integerPattern = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
)

// createOrder is a validated POST /orders body.
type createOrder struct {
	customerID int64
	items      []item
}

// rawCreateOrder is the body's shape; values stay raw so that each one is
// checked (and reported) on its own, with its position.
type rawCreateOrder struct {
	CustomerID json.RawMessage `json:"customer_id"`
	Items      []rawItem       `json:"items"`
}

type rawItem struct {
	SKU       json.RawMessage `json:"sku"`
	Quantity  json.RawMessage `json:"quantity"`
	UnitPrice json.RawMessage `json:"unit_price"`
}

// decodeCreateOrder reads one JSON object from r (bounded by the caller)
// and validates it. Numbers are never decoded as floats: integers are parsed
// from their digits and prices are decimal strings. encoding/json matches
// field names case-insensitively, which is accepted, and keeps the last of
// duplicate fields, which is not: a key given twice (in any case) is
// refused, since parsers disagree on which one counts.
func decodeCreateOrder(r io.Reader) (createOrder, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return createOrder{}, decodeError(err)
	}
	if field := duplicateKey(body); field != "" {
		return createOrder{}, badRequest(CodeDuplicateField, field, "%s is given twice", field)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var raw rawCreateOrder
	if err := dec.Decode(&raw); err != nil {
		return createOrder{}, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return createOrder{}, decodeError(err)
		}
		return createOrder{}, badRequest(CodeMalformedJSON, "", "unexpected data after the JSON object")
	}

	var req createOrder
	if req.customerID, err = parseInteger(raw.CustomerID, "customer_id", 1, CustomerIDMax); err != nil {
		return createOrder{}, err
	}
	switch {
	case raw.Items == nil:
		return createOrder{}, badRequest(CodeMissingValue, "items", "items is required")
	case len(raw.Items) == 0:
		return createOrder{}, badRequest(CodeMissingValue, "items", "an order needs at least one item")
	case len(raw.Items) > ItemsMax:
		return createOrder{}, badRequest(CodeInvalidValue, "items", "an order has at most %d items, got %d", ItemsMax, len(raw.Items))
	}
	req.items = make([]item, len(raw.Items))
	for i, ri := range raw.Items {
		field := func(name string) string { return fmt.Sprintf("items[%d].%s", i, name) }
		it := &req.items[i]
		if it.sku, err = parseSKU(ri.SKU, field("sku")); err != nil {
			return createOrder{}, err
		}
		if it.quantity, err = parseInteger(ri.Quantity, field("quantity"), 1, QuantityMax); err != nil {
			return createOrder{}, err
		}
		if it.unitPrice, err = parsePrice(ri.UnitPrice, field("unit_price")); err != nil {
			return createOrder{}, err
		}
	}
	return req, nil
}

// decodeError turns an encoding/json error into a 400 or 413 answer.
func decodeError(err error) error {
	var (
		tooLarge  *http.MaxBytesError
		syntax    *json.SyntaxError
		wrongType *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, detail: ErrorDetail{
			Code: CodeBodyTooLarge, Message: fmt.Sprintf("the body exceeds %d bytes", tooLarge.Limit),
		}}
	case errors.Is(err, io.EOF):
		return badRequest(CodeMalformedJSON, "", "the body is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest(CodeMalformedJSON, "", "the body ends inside a JSON value")
	case errors.As(err, &syntax):
		return badRequest(CodeMalformedJSON, "", "malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &wrongType):
		if wrongType.Field == "" {
			return badRequest(CodeMalformedJSON, "", "the body must be a JSON object")
		}
		return badRequest(CodeInvalidValue, wrongType.Field, "%s must not be a JSON %s", wrongType.Field, wrongType.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return badRequest(CodeUnknownField, name, "unknown field %q", name)
	}
	return badRequest(CodeMalformedJSON, "", "the body is not valid JSON")
}

// duplicateKey returns the path of the first key given twice in one object
// of body ("customer_id", "items[1].sku"), comparing keys as encoding/json
// matches them to fields (case-insensitively), or "" when there is none or
// body is not one valid JSON value (the decoder then says what is wrong).
func duplicateKey(body []byte) string {
	type frame struct {
		object  bool
		path    string   // of the object or array itself
		keys    []string // keys seen so far (object)
		key     string   // key whose value comes next (object)
		wantKey bool     // the next string is a key (object)
		index   int      // index of the next element (array)
	}
	var stack []*frame
	// slot returns the path of the value about to be read.
	slot := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if !f.object {
			f.index++
			return fmt.Sprintf("%s[%d]", f.path, f.index-1)
		}
		if f.path == "" {
			return f.key
		}
		return f.path + "." + f.key
	}
	valueRead := func() {
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{object: t == '{', path: slot(), wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return ""
				}
				valueRead()
			}
		case string:
			if top != nil && top.object && top.wantKey {
				top.key, top.wantKey = t, false
				for _, k := range top.keys {
					if strings.EqualFold(k, t) {
						return slot()
					}
				}
				top.keys = append(top.keys, t)
				continue
			}
			slot()
			valueRead()
		default:
			if top == nil {
				return ""
			}
			slot()
			valueRead()
		}
		if top == nil && len(stack) == 0 {
			return ""
		}
	}
}

func missing(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// parseInteger reads a JSON integer in [lo, hi] from its digits.
func parseInteger(raw json.RawMessage, field string, lo, hi int64) (int64, error) {
	if missing(raw) {
		return 0, badRequest(CodeMissingValue, field, "%s is required", field)
	}
	if !integerPattern.Match(raw) {
		return 0, badRequest(CodeInvalidValue, field, "%s must be a whole JSON number", field)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(CodeInvalidValue, field, "%s must be between %d and %d", field, lo, hi)
	}
	return n, nil
}

func parseString(raw json.RawMessage, field string) (string, error) {
	if missing(raw) {
		return "", badRequest(CodeMissingValue, field, "%s is required", field)
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", badRequest(CodeInvalidValue, field, "%s must be a JSON string", field)
	}
	return s, nil
}

func parseSKU(raw json.RawMessage, field string) (string, error) {
	sku, err := parseString(raw, field)
	if err != nil {
		return "", err
	}
	// The consumers check the same definition: a SKU accepted here is one
	// they can reserve.
	if strings.TrimSpace(sku) == "" {
		return "", badRequest(CodeMissingValue, field, "%s must not be empty", field)
	}
	// encoding/json turned invalid UTF-8 into U+FFFD, which the contract
	// would accept; the body's own bytes were invalid.
	if strings.ContainsRune(sku, utf8.RuneError) {
		return "", badRequest(CodeInvalidValue, field, "%s contains invalid UTF-8", field)
	}
	if err := contract.ValidateSKU(sku); err != nil {
		return "", badRequest(CodeInvalidValue, field, "%s: %v", field, err)
	}
	return sku, nil
}

// parsePrice reads a decimal string such as "9.99".
func parsePrice(raw json.RawMessage, field string) (decimal.Decimal, error) {
	s, err := parseString(raw, field)
	if err != nil {
		if !missing(raw) {
			err = badRequest(CodeInvalidValue, field, `%s must be a decimal string such as "9.99"`, field)
		}
		return decimal.Decimal{}, err
	}
	if !pricePattern.MatchString(s) {
		return decimal.Decimal{}, badRequest(CodeInvalidValue, field,
			`%s must be a non-negative decimal string with at most 2 decimals, such as "9.99"`, field)
	}
	d, err := decimal.NewFromString(s)
	if err != nil || d.GreaterThan(unitPriceMax) {
		return decimal.Decimal{}, badRequest(CodeInvalidValue, field, "%s must be at most %s", field, UnitPriceMax)
	}
	return d, nil
}

// canonicalHash identifies the order a request asks for: equal for requests
// that differ only in JSON spelling ("9.9" and "9.90", spacing, key order).
// An Idempotency-Key replay must carry the same hash.
func (c createOrder) canonicalHash() []byte {
	b, err := json.Marshal(struct {
		CustomerID int64  `json:"customer_id"`
		Items      []Item `json:"items"`
	}{c.customerID, apiItems(c.items)})
	if err != nil {
		panic(fmt.Sprintf("encode canonical order: %v", err))
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// idempotencyKey reads the optional Idempotency-Key header: 1 to 255
// printable ASCII characters.
func idempotencyKey(h http.Header) (string, error) {
	values := h.Values(IdempotencyKeyHeader)
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", badRequest(CodeInvalidValue, IdempotencyKeyHeader, "send %s once", IdempotencyKeyHeader)
	}
	key := values[0]
	if key == "" || len(key) > IdempotencyKeyMaxLen {
		return "", badRequest(CodeInvalidValue, IdempotencyKeyHeader, "%s must have 1 to %d characters", IdempotencyKeyHeader, IdempotencyKeyMaxLen)
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "", badRequest(CodeInvalidValue, IdempotencyKeyHeader, "%s must be printable ASCII without spaces", IdempotencyKeyHeader)
		}
	}
	return key, nil
}
