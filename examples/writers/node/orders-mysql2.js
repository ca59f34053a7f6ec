// Orders and their events in one transaction with mysql2 (MySQL/MariaDB).
// The outbox row is a plain INSERT: herald's trigger numbers it in its
// aggregate and makes it ready; a rollback leaves nothing.
'use strict';
const { randomUUID } = require('node:crypto');

class CreditLimitExceeded extends Error {}

async function addEvent(conn, orderId, type, payload) {
  const id = randomUUID();
  await conn.execute(
    'INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload) VALUES (?, ?, ?, ?, ?, ?)',
    [id, 'order', String(orderId), type, 1, JSON.stringify(payload)]);
  return id;
}

// conn: a connection of require('mysql2/promise'), not a pool (a
// transaction is one connection's).
async function createOrder(conn, customerId, total) {
  await conn.beginTransaction();
  try {
    const [res] = await conn.execute(
      "INSERT INTO orders (customer_id, total_amount, status) VALUES (?, ?, 'created')", [customerId, total]);
    const orderId = String(res.insertId);
    const eventId = await addEvent(conn, orderId, 'order.created',
      { order_id: Number(orderId), customer_id: customerId, total_amount: total });
    if (Number(total) > 1000) {
      throw new CreditLimitExceeded(`order ${orderId}: ${total} is over the credit limit`);
    }
    await conn.commit();
    return { orderId, eventId };
  } catch (e) {
    await conn.rollback(); // the order and its event are gone, never published
    throw e;
  }
}

// Returns the event's id, or null when the order was not open.
async function cancelOrder(conn, orderId) {
  await conn.beginTransaction();
  try {
    const [res] = await conn.execute(
      "UPDATE orders SET status = 'cancelled' WHERE id = ? AND status = 'created'", [orderId]);
    if (res.affectedRows === 0) {
      await conn.rollback();
      return null;
    }
    const eventId = await addEvent(conn, orderId, 'order.cancelled',
      { order_id: Number(orderId), reason: 'customer request' });
    await conn.commit();
    return eventId;
  } catch (e) {
    await conn.rollback();
    throw e;
  }
}

module.exports = { createOrder, cancelOrder, CreditLimitExceeded };
