// Package reservations is the shop's stock consumer, written for the
// records of Debezium's Outbox Event Router: it reserves stock when an
// order is placed and confirms it when the order is paid. With herald's
// inbox it applies each event exactly once; moving the relay from
// Debezium to herald changed one setting here, Format.
package reservations

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/store/mysql"
)

// Schema is the consumer's own table.
const Schema = `CREATE TABLE reservations (
  order_id  BIGINT      NOT NULL,
  status    VARCHAR(16) NOT NULL,
  event_id  CHAR(36)    NOT NULL
)`

// New returns the consumer of topic (outbox.event.order by Debezium's
// default routing) applying its events to db, which holds reservations and
// herald's consumed_events.
func New(db *sql.DB, brokers []string, topic string) (*inbox.Consumer, error) {
	return inbox.New(inbox.Config{
		ConsumerName: "reservations",
		Brokers:      brokers,
		Topics:       []string{topic},
		DB:           db,
		Dialect:      mysql.Dialect{},
		Format:       inbox.FormatDebezium, // the event id is the record's "id" header
		TypeHeader:   "eventType",          // table.fields.additional.placement=type:header:eventType
		Handler:      inbox.HandlerFunc(apply),
	})
}

// apply runs inside the inbox's transaction: the reservation and the
// event's id in consumed_events commit together, or neither does.
func apply(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
	var order struct {
		OrderID int64 `json:"order_id"`
	}
	if err := json.Unmarshal(m.Data, &order); err != nil {
		return inbox.Permanent(fmt.Errorf("payload: %w", err))
	}
	switch m.Type {
	case "OrderPlaced":
		_, err := tx.ExecContext(ctx, "INSERT INTO reservations (order_id, status, event_id) VALUES (?, 'reserved', ?)",
			order.OrderID, m.EventID)
		return err
	case "OrderPaid":
		res, err := tx.ExecContext(ctx, "UPDATE reservations SET status = 'confirmed' WHERE order_id = ? AND status = 'reserved'",
			order.OrderID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("order %d paid before it was reserved", order.OrderID)
		}
	}
	return nil
}
