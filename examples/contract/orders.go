package contract

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herald-outbox/herald/envelope"
)

// Event types of the orders topic.
const (
	// TypeOrderCreated: an order was placed. Versions: 1 (OrderCreatedV1).
	TypeOrderCreated = "order.created"
	// TypeOrderCancelled: an order was cancelled. Versions: 1
	// (OrderCancelledV1).
	TypeOrderCancelled = "order.cancelled"
)

// TopicOrdersDefault is the topic the orders example publishes to.
const TopicOrdersDefault = "orders.v1"

// SKUMaxLen is the longest SKU, in characters (the SKU columns of the
// examples are VARCHAR(64) in utf8mb4, which count characters, not bytes).
const SKUMaxLen = 64

// ValidateSKU is the one definition of a SKU, used by the orders API that
// produces events and by the consumers and the warehouse that read them: 1
// to SKUMaxLen characters of valid UTF-8, not blank, no control characters.
func ValidateSKU(sku string) error {
	switch {
	case strings.TrimSpace(sku) == "":
		return errors.New("sku must not be empty")
	case !utf8.ValidString(sku):
		return errors.New("sku is not valid UTF-8")
	case utf8.RuneCountInString(sku) > SKUMaxLen:
		return fmt.Errorf("sku is longer than %d characters", SKUMaxLen)
	case strings.ContainsFunc(sku, unicode.IsControl):
		return errors.New("sku contains control characters")
	}
	return nil
}

// OrderItem is one line of an order.
type OrderItem struct {
	// SKU identifies the product ("SKU-1"); see ValidateSKU.
	SKU string `json:"sku"`
	// Quantity is how many units; at least 1.
	Quantity int64 `json:"quantity"`
	// UnitPrice is the price of one unit, a decimal string ("9.99").
	UnitPrice string `json:"unit_price"`
}

// OrderCreatedV1 is the data of order.created version 1.
type OrderCreatedV1 struct {
	OrderID    int64       `json:"order_id"`
	CustomerID int64       `json:"customer_id"`
	Items      []OrderItem `json:"items"`
	// TotalAmount is the order's total, a decimal string ("19.98").
	TotalAmount string `json:"total_amount"`
}

// OrderCancelledV1 is the data of order.cancelled version 1: the order as
// it was when it was cancelled.
type OrderCancelledV1 struct {
	OrderID     int64       `json:"order_id"`
	CustomerID  int64       `json:"customer_id"`
	Items       []OrderItem `json:"items"`
	TotalAmount string      `json:"total_amount"`
}

// Validate checks what a consumer relies on.
func (o *OrderCreatedV1) Validate() error {
	return validateOrder(o.OrderID, o.Items, o.TotalAmount)
}

// Validate checks what a consumer relies on.
func (o *OrderCancelledV1) Validate() error {
	return validateOrder(o.OrderID, o.Items, o.TotalAmount)
}

// decimalPattern is a decimal string: digits, optionally a point and
// digits, optionally negative (refunds).
var decimalPattern = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,10})?$`)

// ErrInvalidPayload is wrapped by every Validate error.
var ErrInvalidPayload = errors.New("invalid payload")

func validateOrder(orderID int64, items []OrderItem, total string) error {
	if orderID <= 0 {
		return fmt.Errorf("%w: order_id must be positive, got %d", ErrInvalidPayload, orderID)
	}
	if !decimalPattern.MatchString(total) {
		return fmt.Errorf("%w: total_amount %.40q is not a decimal string", ErrInvalidPayload, total)
	}
	for i, it := range items {
		if err := ValidateSKU(it.SKU); err != nil {
			return fmt.Errorf("%w: items[%d]: %v", ErrInvalidPayload, i, err)
		}
		switch {
		case it.Quantity <= 0:
			return fmt.Errorf("%w: items[%d].quantity must be positive, got %d", ErrInvalidPayload, i, it.Quantity)
		case !decimalPattern.MatchString(it.UnitPrice):
			return fmt.Errorf("%w: items[%d].unit_price %.40q is not a decimal string", ErrInvalidPayload, i, it.UnitPrice)
		}
	}
	return nil
}

// NewRegistry returns a registry that decodes every event type and version
// of this package.
func NewRegistry() *envelope.Registry {
	r := envelope.NewRegistry()
	envelope.Register[OrderCreatedV1](r, TypeOrderCreated, 1)
	envelope.Register[OrderCancelledV1](r, TypeOrderCancelled, 1)
	return r
}
