package stock

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/store"
)

// Warehouse actions, as warehouse_calls.action and the warehouse's API name
// them.
const (
	ActionReserve = "reserve"
	ActionRelease = "release"
)

// line is one SKU of an order, quantities of repeated SKUs summed.
type line struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// operation is the body of a warehouse call.
type operation struct {
	Action  string `json:"action"`
	OrderID int64  `json:"order_id"`
	Items   []line `json:"items"`
}

// lines sums quantities per SKU and sorts by SKU, so that every transaction
// locks stock rows in the same order.
func lines(items []contract.OrderItem) []line {
	bySKU := map[string]int64{}
	for _, it := range items {
		bySKU[it.SKU] += it.Quantity
	}
	out := make([]line, 0, len(bySKU))
	for sku, q := range bySKU {
		out = append(out, line{sku, q})
	}
	slices.SortFunc(out, func(a, b line) int { return cmp.Compare(a.SKU, b.SKU) })
	return out
}

// reserver applies order events to stock; it is the inbox handler.
type reserver struct {
	dialect       store.Dialect
	autoProvision bool
	defaultStock  int64
}

// sql returns a statement written with ? placeholders in the database's
// form; CURRENT_TIMESTAMP(6) is the clock in both.
func (r *reserver) sql(query string) string { return database.Rebind(r.dialect, query) }

// Handle dispatches on the payload type; the registry already refused
// unknown types and versions.
func (r *reserver) Handle(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
	switch p := m.Payload.(type) {
	case contract.OrderCreatedV1:
		return r.reserve(ctx, tx, m.EventID, p)
	case contract.OrderCancelledV1:
		return r.release(ctx, tx, m.EventID, p)
	}
	return inbox.Permanent(fmt.Errorf("no handling for payload %T", m.Payload))
}

// reserve takes each item's quantity from available stock, or records the
// order as rejected when any item is short; and, in the same transaction,
// queues the warehouse call.
func (r *reserver) reserve(ctx context.Context, tx *sql.Tx, eventID string, o contract.OrderCreatedV1) error {
	ls := lines(o.Items)
	if len(ls) == 0 {
		return nil
	}
	// A second guard behind the inbox: an order already reserved or
	// rejected (say, by an event with another id) is left alone.
	var seen int
	if err := tx.QueryRowContext(ctx, r.sql(
		"SELECT (SELECT COUNT(*) FROM reservations WHERE order_id = ?) + (SELECT COUNT(*) FROM rejections WHERE order_id = ?)"),
		o.OrderID, o.OrderID).Scan(&seen); err != nil {
		return fmt.Errorf("look up order %d: %w", o.OrderID, err)
	}
	if seen > 0 {
		return nil
	}

	skus := make([]any, len(ls))
	for i, l := range ls {
		skus[i] = l.SKU
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(ls)), ",") + ")"
	if r.autoProvision {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, 0, CURRENT_TIMESTAMP(6)),", len(ls)), ",")
		args := make([]any, 0, 2*len(ls))
		for _, l := range ls {
			args = append(args, l.SKU, r.defaultStock)
		}
		if _, err := tx.ExecContext(ctx, r.sql("INSERT INTO stock (sku, available, reserved, updated_at) VALUES "+values+keepExisting(r.dialect, "sku")), args...); err != nil {
			return fmt.Errorf("provision stock: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, r.sql("SELECT sku, available FROM stock WHERE sku IN "+in+" ORDER BY sku FOR UPDATE"), skus...)
	if err != nil {
		return fmt.Errorf("lock stock: %w", err)
	}
	available := map[string]int64{}
	for rows.Next() {
		var sku string
		var n int64
		if err := rows.Scan(&sku, &n); err != nil {
			rows.Close()
			return err
		}
		available[sku] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, l := range ls {
		n, ok := available[l.SKU]
		if !ok || n < l.Quantity {
			reason := fmt.Sprintf("%s: %d requested, %d available", l.SKU, l.Quantity, n)
			if !ok {
				reason = l.SKU + ": unknown sku"
			}
			_, err := tx.ExecContext(ctx, r.sql(
				"INSERT INTO rejections (order_id, event_id, reason, created_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP(6))"),
				o.OrderID, eventID, reason)
			return err
		}
	}

	resArgs := make([]any, 0, 4*len(ls))
	for _, l := range ls {
		if _, err := tx.ExecContext(ctx, r.sql(
			"UPDATE stock SET available = available - ?, reserved = reserved + ?, updated_at = CURRENT_TIMESTAMP(6) WHERE sku = ?"),
			l.Quantity, l.Quantity, l.SKU); err != nil {
			return fmt.Errorf("reserve %s: %w", l.SKU, err)
		}
		resArgs = append(resArgs, o.OrderID, l.SKU, l.Quantity, eventID)
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, 'reserved', ?, CURRENT_TIMESTAMP(6), CURRENT_TIMESTAMP(6)),", len(ls)), ",")
	if _, err := tx.ExecContext(ctx, r.sql(
		"INSERT INTO reservations (order_id, sku, quantity, status, reserved_event_id, created_at, updated_at) VALUES "+values),
		resArgs...); err != nil {
		return fmt.Errorf("record reservations: %w", err)
	}
	return r.queueCall(ctx, tx, eventID, operation{Action: ActionReserve, OrderID: o.OrderID, Items: ls})
}

// release gives an order's reserved stock back, once, and queues the
// warehouse call. An order with nothing reserved (rejected, or released
// already) is left alone.
func (r *reserver) release(ctx context.Context, tx *sql.Tx, eventID string, o contract.OrderCancelledV1) error {
	rows, err := tx.QueryContext(ctx, r.sql(
		"SELECT sku, quantity FROM reservations WHERE order_id = ? AND status = 'reserved' ORDER BY sku FOR UPDATE"), o.OrderID)
	if err != nil {
		return fmt.Errorf("lock reservations of order %d: %w", o.OrderID, err)
	}
	var ls []line
	for rows.Next() {
		var l line
		if err := rows.Scan(&l.SKU, &l.Quantity); err != nil {
			rows.Close()
			return err
		}
		ls = append(ls, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ls) == 0 {
		return nil
	}
	for _, l := range ls {
		if _, err := tx.ExecContext(ctx, r.sql(
			"UPDATE stock SET available = available + ?, reserved = reserved - ?, updated_at = CURRENT_TIMESTAMP(6) WHERE sku = ?"),
			l.Quantity, l.Quantity, l.SKU); err != nil {
			return fmt.Errorf("release %s: %w", l.SKU, err)
		}
	}
	if _, err := tx.ExecContext(ctx, r.sql(
		"UPDATE reservations SET status = 'released', released_event_id = ?, updated_at = CURRENT_TIMESTAMP(6) WHERE order_id = ? AND status = 'reserved'"),
		eventID, o.OrderID); err != nil {
		return fmt.Errorf("release order %d: %w", o.OrderID, err)
	}
	return r.queueCall(ctx, tx, eventID, operation{Action: ActionRelease, OrderID: o.OrderID, Items: ls})
}

// queueCall writes the pending warehouse call in the caller's transaction:
// if the reservation commits, the call will be made (after the commit, by
// the dispatcher, or by the sweeper after a crash).
func (r *reserver) queueCall(ctx context.Context, tx *sql.Tx, eventID string, op operation) error {
	body, err := json.Marshal(op)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, r.sql(
		"INSERT INTO warehouse_calls (idempotency_key, action, order_id, body, next_attempt_at, created_at) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP(6), CURRENT_TIMESTAMP(6))"),
		eventID, op.Action, op.OrderID, body)
	if err != nil {
		return fmt.Errorf("queue warehouse call: %w", err)
	}
	return nil
}
