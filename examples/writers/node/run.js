// Runs a Node writer snippet (orders-mysql2.js or orders-pg.js, by
// WRITER_DB) as workers of the writers test
// (examples/writers/writers_test.go): WRITER_WORKERS concurrent workers,
// each on its own connection, each creating WRITER_ORDERS orders for its
// own customer (from WRITER_CUSTOMER on), every fourth over the credit
// limit (rolled back), then cancelling each created order in a later
// transaction, the first one twice (the second finds nothing to cancel).
// One JSON line per outcome. Sessions are at +05:30; the application's
// clock is the process's TZ (+08:00 in the test). The drivers come from
// NODE_PATH (stack/writers.sh installs them).
'use strict';

const env = (name) => {
  const v = process.env[name];
  if (v === undefined) throw new Error(`${name} is not set`);
  return v;
};
const postgres = env('WRITER_DB') === 'postgres';
const orders = require(postgres ? './orders-pg.js' : './orders-mysql2.js');
const emit = (line) => process.stdout.write(JSON.stringify(line) + '\n');

async function connect() {
  const opts = { host: env('WRITER_HOST'), port: Number(env('WRITER_PORT')), user: env('WRITER_USER'),
    password: env('WRITER_PASSWORD'), database: env('WRITER_DATABASE') };
  if (postgres) {
    const { Client } = require('pg');
    const client = new Client(opts);
    await client.connect();
    await client.query("SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE");
    return { conn: client, close: () => client.end() };
  }
  const mysql = require('mysql2/promise');
  const conn = await mysql.createConnection(opts);
  await conn.query("SET time_zone = '+05:30'");
  return { conn, close: () => conn.end() };
}

async function worker(customer) {
  const { conn, close } = await connect();
  const created = [];
  for (let k = 0; k < Number(env('WRITER_ORDERS')); k++) {
    const total = k % 4 === 3 ? '5000.00' : `${100 + k}.50`;
    try {
      const { orderId, eventId } = await orders.createOrder(conn, customer, total);
      created.push(orderId);
      emit({ outcome: 'committed', event_type: 'order.created', order_id: orderId, event_id: eventId });
    } catch (e) {
      if (!(e instanceof orders.CreditLimitExceeded)) throw e;
      emit({ outcome: 'rolled_back', event_type: 'order.created' });
    }
  }
  for (const orderId of created) {
    emit({ outcome: 'committed', event_type: 'order.cancelled', order_id: orderId,
      event_id: await orders.cancelOrder(conn, orderId) });
  }
  if (created.length > 0) {
    if (await orders.cancelOrder(conn, created[0]) !== null) throw new Error(`order ${created[0]} was cancelled twice`);
    emit({ outcome: 'rolled_back', event_type: 'order.cancelled', order_id: created[0] });
  }
  await close();
}

const first = Number(env('WRITER_CUSTOMER'));
const workers = Number(process.env.WRITER_WORKERS || '4');
Promise.all(Array.from({ length: workers }, (_, i) => worker(first + i))).catch((e) => {
  console.error(e);
  process.exit(1);
});
