package api

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/herald-outbox/herald/examples/contract"
)

// Order statuses.
const (
	// StatusCreated is a new order's status.
	StatusCreated = "created"
	// StatusCancelled is the status of an order after POST /orders/{id}/cancel.
	StatusCancelled = "cancelled"
)

// The events the service writes to the outbox. Both carry an EventPayload.
const (
	// AggregateType is the outbox aggregate type of every order event; the
	// aggregate id is the order id in decimal.
	AggregateType = "order"
	// EventOrderCreated is written with a new order.
	EventOrderCreated = contract.TypeOrderCreated
	// EventOrderCancelled is written when an order is cancelled.
	EventOrderCancelled = contract.TypeOrderCancelled
	// EventSchemaVersion is the version of EventPayload's shape.
	EventSchemaVersion = 1
)

// Item is one line of an order, as the API answers it and as events carry
// it. UnitPrice is a decimal string with two decimals ("9.99"). It is the
// wire contract's type (examples/contract), so producer and consumers
// cannot drift apart.
type Item = contract.OrderItem

// Order is the answer of GET /orders/{id}. Money is a decimal string with
// two decimals; times are UTC.
type Order struct {
	OrderID     int64     `json:"order_id"`
	CustomerID  int64     `json:"customer_id"`
	Status      string    `json:"status"`
	Items       []Item    `json:"items"`
	TotalAmount string    `json:"total_amount"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// EventPayload is the data of order.created and order.cancelled (schema
// version 1): the whole order as it was, so a consumer can reserve or
// release stock from the event alone. Both versions 1 share this shape
// (contract.OrderCreatedV1 and OrderCancelledV1, pinned by the golden files
// in envelope/testdata).
type EventPayload = contract.OrderCreatedV1

// OrderResponse is the answer of POST /orders (201) and of
// POST /orders/{id}/cancel (200).
type OrderResponse struct {
	OrderID     int64  `json:"order_id"`
	Status      string `json:"status"`
	TotalAmount string `json:"total_amount"`
}

// order is an order as the service handles it: money as exact decimals.
type order struct {
	id         int64
	customerID int64
	status     string
	items      []item
	total      decimal.Decimal
	createdAt  time.Time
	updatedAt  time.Time
}

// item is one validated order line.
type item struct {
	sku       string
	quantity  int64
	unitPrice decimal.Decimal
}

// money formats an amount the way the API and the events carry it.
func money(d decimal.Decimal) string { return d.StringFixed(2) }

// totalOf is the exact sum of quantity × unit price over items.
func totalOf(items []item) decimal.Decimal {
	total := decimal.Zero
	for _, it := range items {
		total = total.Add(it.unitPrice.Mul(decimal.NewFromInt(it.quantity)))
	}
	return total
}

func apiItems(items []item) []Item {
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = Item{SKU: it.sku, Quantity: it.quantity, UnitPrice: money(it.unitPrice)}
	}
	return out
}

func (o order) api() Order {
	return Order{
		OrderID: o.id, CustomerID: o.customerID, Status: o.status, Items: apiItems(o.items),
		TotalAmount: money(o.total), CreatedAt: o.createdAt, UpdatedAt: o.updatedAt,
	}
}

func (o order) eventPayload() EventPayload {
	return EventPayload{OrderID: o.id, CustomerID: o.customerID, Items: apiItems(o.items), TotalAmount: money(o.total)}
}
