// Package stock is the inventory consumer behind examples/inventory: stock
// reservations applied exactly once per order event through the inbox, and
// the warehouse told about each one after the commit.
//
// Per event, in the inbox's transaction:
//
//   - order.created v1: take each item's quantity from stock (unknown SKUs
//     are created with DefaultStock unless DisableAutoProvision), insert one
//     reservations row per SKU, and queue a "reserve" call in
//     warehouse_calls; if any item is short, record the order in
//     rejections instead (no call).
//   - order.cancelled v1: give the order's reserved quantities back, mark
//     its reservations released, and queue a "release" call.
//
// After the commit the dispatcher POSTs each queued call to the warehouse
// with the event id as Idempotency-Key and marks it done. A crash between
// the commit and the call leaves the row pending; a sweeper (every
// SweepInterval, for rows older than SweepGrace) retries pending calls with
// backoff, so every call happens at least once, never inside the
// transaction, and has its effect once because the warehouse deduplicates
// by key.
//
//	svc, err := stock.New(stock.Config{DB: db, Brokers: brokers})
//	if err != nil { ... }
//	err = svc.Run(ctx)
package stock
