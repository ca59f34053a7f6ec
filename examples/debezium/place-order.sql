-- The shop's writer, unchanged: in one transaction the order, its event,
-- and (Debezium's habit) the event's row deleted again, so the table stays
-- empty and only the binlog keeps the event. The caller sets @order_id.
START TRANSACTION;
INSERT INTO orders (id, customer_id, total, status) VALUES (@order_id, 42, 199.00, 'placed');
SET @event_id = UUID();
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
VALUES (@event_id, 'order', @order_id, 'OrderPlaced',
        CONCAT('{"order_id": ', @order_id, ', "customer_id": 42, "total": "199.00"}'));
DELETE FROM outbox WHERE id = @event_id;
COMMIT;

START TRANSACTION;
UPDATE orders SET status = 'paid' WHERE id = @order_id;
SET @event_id = UUID();
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
VALUES (@event_id, 'order', @order_id, 'OrderPaid', CONCAT('{"order_id": ', @order_id, '}'));
DELETE FROM outbox WHERE id = @event_id;
COMMIT;
