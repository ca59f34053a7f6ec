// Package gosql is the writer snippet for plain Go database/sql, without
// herald's library (docs/writers.md): orders and their events in one
// transaction, on MySQL/MariaDB or PostgreSQL. The outbox row is a plain
// INSERT: herald's trigger numbers it in its aggregate and makes it ready;
// a rollback leaves nothing. herald's own outbox.Writer writes the same
// rows.
package gosql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
)

// ErrCreditLimit is the business rule that rolls an order back.
var ErrCreditLimit = errors.New("over the credit limit")

// Orders writes orders and their events. Postgres selects the
// placeholders ($1 or ?) and how the order's id comes back.
type Orders struct {
	DB       *sql.DB
	Postgres bool
}

func (o Orders) q(mysql, postgres string) string {
	if o.Postgres {
		return postgres
	}
	return mysql
}

func (o Orders) addEvent(ctx context.Context, tx *sql.Tx, orderID int64, eventType string, payload any) (string, error) {
	id := uuid.NewString()
	data, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	_, err = tx.ExecContext(ctx, o.q(
		"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES (?, ?, ?, ?, ?, ?)",
		"INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES ($1, $2, $3, $4, $5, $6)"),
		id, "order", strconv.FormatInt(orderID, 10), eventType, 1, string(data))
	return id, err
}

// Create writes an order and its order.created event, and returns their
// ids; an order over the credit limit is rolled back (ErrCreditLimit).
func (o Orders) Create(ctx context.Context, customerID int64, total string) (orderID int64, eventID string, err error) {
	tx, err := o.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, "", err
	}
	defer tx.Rollback() // a no-op after Commit; otherwise the order and its event are gone
	if o.Postgres {
		err = tx.QueryRowContext(ctx, "INSERT INTO orders (customer_id, total_amount, status) VALUES ($1, $2, 'created') RETURNING id",
			customerID, total).Scan(&orderID)
	} else {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, "INSERT INTO orders (customer_id, total_amount, status) VALUES (?, ?, 'created')",
			customerID, total); err == nil {
			orderID, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, "", err
	}
	eventID, err = o.addEvent(ctx, tx, orderID, "order.created",
		map[string]any{"order_id": orderID, "customer_id": customerID, "total_amount": total})
	if err != nil {
		return 0, "", err
	}
	if amount, _ := strconv.ParseFloat(total, 64); amount > 1000 {
		return 0, "", fmt.Errorf("order %d: %s: %w", orderID, total, ErrCreditLimit)
	}
	return orderID, eventID, tx.Commit()
}

// Cancel cancels an open order with an order.cancelled event and returns
// the event's id, or "" when the order was not open.
func (o Orders) Cancel(ctx context.Context, orderID int64) (string, error) {
	tx, err := o.DB.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, o.q(
		"UPDATE orders SET status = 'cancelled' WHERE id = ? AND status = 'created'",
		"UPDATE orders SET status = 'cancelled' WHERE id = $1 AND status = 'created'"), orderID)
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return "", err
	}
	eventID, err := o.addEvent(ctx, tx, orderID, "order.cancelled",
		map[string]any{"order_id": orderID, "reason": "customer request"})
	if err != nil {
		return "", err
	}
	return eventID, tx.Commit()
}
