// Orders and their events in one transaction with pg (PostgreSQL). The
// outbox row is a plain INSERT: herald's trigger numbers it in its
// aggregate and makes it ready; a rollback leaves nothing.
'use strict';
const { randomUUID } = require('node:crypto');

class CreditLimitExceeded extends Error {}

async function addEvent(client, orderId, type, payload) {
  const id = randomUUID();
  await client.query(
    'INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES ($1, $2, $3, $4, $5, $6)',
    [id, 'order', String(orderId), type, 1, JSON.stringify(payload)]);
  return id;
}

// client: a pg.Client, or a client checked out of a pg.Pool (a transaction
// is one connection's).
async function createOrder(client, customerId, total) {
  await client.query('BEGIN');
  try {
    const res = await client.query(
      "INSERT INTO orders (customer_id, total_amount, status) VALUES ($1, $2, 'created') RETURNING id", [customerId, total]);
    const orderId = String(res.rows[0].id);
    const eventId = await addEvent(client, orderId, 'order.created',
      { order_id: Number(orderId), customer_id: customerId, total_amount: total });
    if (Number(total) > 1000) {
      throw new CreditLimitExceeded(`order ${orderId}: ${total} is over the credit limit`);
    }
    await client.query('COMMIT');
    return { orderId, eventId };
  } catch (e) {
    await client.query('ROLLBACK'); // the order and its event are gone, never published
    throw e;
  }
}

// Returns the event's id, or null when the order was not open.
async function cancelOrder(client, orderId) {
  await client.query('BEGIN');
  try {
    const res = await client.query(
      "UPDATE orders SET status = 'cancelled' WHERE id = $1 AND status = 'created'", [orderId]);
    if (res.rowCount === 0) {
      await client.query('ROLLBACK');
      return null;
    }
    const eventId = await addEvent(client, orderId, 'order.cancelled',
      { order_id: Number(orderId), reason: 'customer request' });
    await client.query('COMMIT');
    return eventId;
  } catch (e) {
    await client.query('ROLLBACK');
    throw e;
  }
}

module.exports = { createOrder, cancelOrder, CreditLimitExceeded };
