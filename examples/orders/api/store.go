package api

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/outbox"
)

// txAttempts bounds how often a transaction is run again after the database
// rolled it back for a reason that passes (a deadlock victim, a
// serialization failure: it was rolled back whole, so running it again is
// safe), or after an Idempotency-Key row vanished between two reads.
const txAttempts = 5

// sql returns a statement written with ? placeholders in the database's
// form (PostgreSQL numbers them); CURRENT_TIMESTAMP(6) is the clock in both.
func (s *Server) sql(query string) string { return database.Rebind(s.cfg.Dialect, query) }

// inTx runs fn in a transaction and commits it; an error from fn or from the
// commit rolls everything back.
func (s *Server) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// created is the outcome of a POST /orders: the answer to send, and whether
// it replays an earlier request's answer.
type created struct {
	status   int
	body     []byte
	orderID  int64
	eventID  string
	replayed bool
}

// errKeyTaken: a committed request already holds the Idempotency-Key.
var errKeyTaken = errors.New("idempotency key taken")

// createOrder writes the order, its items, its order.created event and the
// Idempotency-Key (if any) in one transaction. A key already committed by an
// earlier request answers with that request's answer, or 422 when it came
// with another order. Concurrent requests with one key serialize on the key's
// primary key: the first inserts it, the others wait for its commit and then
// find it taken.
func (s *Server) createOrder(ctx context.Context, req createOrder, key string, rollback bool) (created, error) {
	hash := req.canonicalHash()
	var err error
	for range txAttempts {
		var c created
		c, err = s.tryCreateOrder(ctx, req, key, hash, rollback)
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, errKeyTaken):
			c, found, lerr := s.replay(ctx, key, hash)
			if lerr != nil || found {
				return c, lerr
			}
			// The key was deleted after our insert failed: try again.
		case s.cfg.Dialect.IsTransient(err):
			s.log.WarnContext(ctx, "create order: rolled back by the database (deadlock), running the transaction again", "error", err.Error())
		default:
			return created{}, err
		}
	}
	return created{}, fmt.Errorf("create order: gave up after %d attempts: %w", txAttempts, err)
}

func (s *Server) tryCreateOrder(ctx context.Context, req createOrder, key string, hash []byte, rollback bool) (created, error) {
	var c created
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if key != "" {
			// A duplicate key aborts a PostgreSQL transaction: this one is
			// over either way, and replay reads the key outside it.
			_, err := tx.ExecContext(ctx, s.sql(
				"INSERT INTO idempotency_keys (idempotency_key, request_hash, created_at) VALUES (?, ?, CURRENT_TIMESTAMP(6))"), key, hash)
			if database.IsDuplicate(err) {
				return errKeyTaken
			}
			if err != nil {
				return fmt.Errorf("reserve idempotency key: %w", err)
			}
		}
		o, err := s.insertOrder(ctx, tx, req)
		if err != nil {
			return err
		}
		if s.cfg.afterBusinessInsert != nil {
			if err := s.cfg.afterBusinessInsert(ctx); err != nil {
				return err
			}
		}
		ids, err := s.addEvent(ctx, tx, EventOrderCreated, o)
		if err != nil {
			return err
		}
		if rollback {
			return deliberateRollback{orderID: o.id}
		}
		c = created{status: http.StatusCreated, orderID: o.id, eventID: ids[0]}
		c.body, err = json.Marshal(OrderResponse{OrderID: o.id, Status: o.status, TotalAmount: money(o.total)})
		if err != nil {
			return fmt.Errorf("encode answer: %w", err)
		}
		if key != "" {
			_, err := tx.ExecContext(ctx, s.sql(
				"UPDATE idempotency_keys SET order_id = ?, response_status = ?, response_body = ? WHERE idempotency_key = ?"),
				o.id, c.status, string(c.body), key)
			if err != nil {
				return fmt.Errorf("record idempotency key: %w", err)
			}
		}
		return nil
	})
	return c, err
}

// replay returns the answer recorded with key, or errKeyReused when the key
// came with a different order. found is false when the key is not there.
func (s *Server) replay(ctx context.Context, key string, hash []byte) (c created, found bool, err error) {
	var (
		storedHash []byte
		orderID    sql.NullInt64
		status     sql.NullInt32
		body       sql.NullString
	)
	err = s.cfg.DB.QueryRowContext(ctx, s.sql(
		"SELECT request_hash, order_id, response_status, response_body FROM idempotency_keys WHERE idempotency_key = ?"), key).
		Scan(&storedHash, &orderID, &status, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return created{}, false, nil
	case err != nil:
		return created{}, false, fmt.Errorf("read idempotency key: %w", err)
	case string(storedHash) != string(hash):
		return created{}, true, errKeyReused
	case !orderID.Valid || !status.Valid || !body.Valid:
		// Written in the same transaction as the key: cannot happen.
		return created{}, true, fmt.Errorf("idempotency key committed without its answer")
	}
	return created{status: int(status.Int32), body: []byte(body.String), orderID: orderID.Int64, replayed: true}, true, nil
}

func (s *Server) insertOrder(ctx context.Context, tx *sql.Tx, req createOrder) (order, error) {
	o := order{customerID: req.customerID, status: StatusCreated, items: req.items, total: totalOf(req.items)}
	var err error
	const insert = "INSERT INTO orders (customer_id, status, total_amount, created_at, updated_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP(6), CURRENT_TIMESTAMP(6))"
	if database.OnPostgres(s.cfg.Dialect) {
		err = tx.QueryRowContext(ctx, s.sql(insert+" RETURNING id"), o.customerID, o.status, money(o.total)).Scan(&o.id)
	} else {
		var res sql.Result
		if res, err = tx.ExecContext(ctx, insert, o.customerID, o.status, money(o.total)); err == nil {
			o.id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return order{}, fmt.Errorf("insert order: %w", err)
	}
	var q strings.Builder
	q.WriteString("INSERT INTO order_items (order_id, line_no, sku, quantity, unit_price) VALUES ")
	args := make([]any, 0, 5*len(o.items))
	for i, it := range o.items {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, o.id, i+1, it.sku, it.quantity, money(it.unitPrice))
	}
	if _, err := tx.ExecContext(ctx, s.sql(q.String()), args...); err != nil {
		return order{}, fmt.Errorf("insert items of order %d: %w", o.id, err)
	}
	return o, nil
}

// addEvent writes one event about o, carrying the whole order.
func (s *Server) addEvent(ctx context.Context, tx *sql.Tx, eventType string, o order) ([]string, error) {
	payload, err := json.Marshal(o.eventPayload())
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	ids, err := s.writer.Add(ctx, tx, outbox.Event{
		AggregateType: AggregateType,
		AggregateID:   strconv.FormatInt(o.id, 10),
		EventType:     eventType,
		SchemaVersion: EventSchemaVersion,
		Payload:       payload,
	})
	if err != nil {
		return nil, fmt.Errorf("add %s event of order %d: %w", eventType, o.id, err)
	}
	return ids, nil
}

// cancelOrder sets the order's status to cancelled and writes its
// order.cancelled event, in one transaction. The order row is locked first,
// so a cancel waits for the order's creation to commit and two cancels take
// turns: the second finds the order cancelled and writes nothing.
func (s *Server) cancelOrder(ctx context.Context, id int64) (order, string, error) {
	var (
		o       order
		eventID string
		err     error
	)
	for range txAttempts {
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			var err error
			if o, err = s.loadOrder(ctx, tx, id, true); err != nil {
				return err
			}
			if o.status == StatusCancelled {
				return errAlreadyCancelled
			}
			if _, err := tx.ExecContext(ctx, s.sql(
				"UPDATE orders SET status = ?, updated_at = CURRENT_TIMESTAMP(6) WHERE id = ?"), StatusCancelled, id); err != nil {
				return fmt.Errorf("cancel order %d: %w", id, err)
			}
			o.status = StatusCancelled
			ids, err := s.addEvent(ctx, tx, EventOrderCancelled, o)
			if err != nil {
				return err
			}
			eventID = ids[0]
			return nil
		})
		if !s.cfg.Dialect.IsTransient(err) {
			break
		}
		s.log.WarnContext(ctx, "cancel order: rolled back by the database (deadlock), running the transaction again", "order_id", id, "error", err.Error())
	}
	return o, eventID, err
}

// querier is what loadOrder needs of a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadOrder reads order id and its items; forUpdate locks the order row
// until the transaction ends.
func (s *Server) loadOrder(ctx context.Context, q querier, id int64, forUpdate bool) (order, error) {
	query := "SELECT id, customer_id, status, total_amount, created_at, updated_at FROM orders WHERE id = ?"
	if forUpdate {
		query += " FOR UPDATE"
	}
	var o order
	err := q.QueryRowContext(ctx, s.sql(query), id).Scan(&o.id, &o.customerID, &o.status, &o.total, &o.createdAt, &o.updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return order{}, errNotFound
	}
	if err != nil {
		return order{}, fmt.Errorf("read order %d: %w", id, err)
	}
	rows, err := q.QueryContext(ctx, s.sql(
		"SELECT sku, quantity, unit_price FROM order_items WHERE order_id = ? ORDER BY line_no"), id)
	if err != nil {
		return order{}, fmt.Errorf("read items of order %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var it item
		if err := rows.Scan(&it.sku, &it.quantity, &it.unitPrice); err != nil {
			return order{}, fmt.Errorf("read items of order %d: %w", id, err)
		}
		o.items = append(o.items, it)
	}
	if err := rows.Err(); err != nil {
		return order{}, fmt.Errorf("read items of order %d: %w", id, err)
	}
	return o, nil
}
