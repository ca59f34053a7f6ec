// Package api is the orders example service: an HTTP API that writes an order
// and its outbox event in one MySQL/MariaDB transaction, so that the event
// exists if and only if the order does. herald's relay publishes the events
// to Kafka afterwards.
//
// Endpoints:
//
//	POST /orders              create: {"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}
//	                          -> 201 {"order_id":1,"status":"created","total_amount":"19.98"} + order.created
//	GET  /orders/{id}         the order with its items
//	POST /orders/{id}/cancel  -> 200 {"order_id":1,"status":"cancelled",...} + order.cancelled; 409 if cancelled before
//	GET  /healthz             200 when the database answers
//
// Money is exact: prices are decimal strings with at most two decimals, and
// totals are computed with decimals, never floats. An Idempotency-Key header
// makes POST /orders safe to retry: a retry of the same order answers 201
// with the first answer's body and "Idempotent-Replayed: true", creating
// nothing; the key with another order answers 422. Every error answer is
// {"error":{"code":...,"message":...,"field":...}} (ErrorResponse).
//
// Running it in-process:
//
//	db, err := mysql.Open(ctx, dsn) // github.com/herald-outbox/herald/store/mysql
//	if err != nil { ... }
//	if err := api.Migrate(ctx, db); err != nil { ... }
//	srv, err := api.New(api.Config{DB: db, Addr: "127.0.0.1:8080"})
//	if err != nil { ... }
//	err = srv.Run(ctx) // returns nil after a graceful shutdown when ctx ends
//
// The command examples/orders does exactly this, configured by environment
// variables.
package api
