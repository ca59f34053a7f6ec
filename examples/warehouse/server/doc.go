// Package server is the warehouse: a small HTTP service standing in for an
// external API the inventory consumer calls after its own transaction
// commits. It honours idempotency keys the way a careful payment or
// logistics API does, and counts the effects it applied so tests and the
// fault drills can check "called at least once, applied exactly once".
//
//	POST /v1/operations            apply an operation; header Idempotency-Key required
//	     {"action":"reserve"|"release","order_id":9182,"items":[{"sku":"SKU-1","quantity":2}]}
//	     201 {"id":1,"idempotency_key":"...","action":"reserve","order_id":9182,"items":[...]}
//	GET  /v1/operations/{key}      what a key did: {"idempotency_key":..,"status_code":201,"replays":0,"response":{...}}
//	GET  /stats                    {"effects":N,"requests":N,"replays":N,"conflicts":N}
//	GET  /healthz                  {"status":"ok"} when the database answers
//
// A repeated key with the same body (compared after parsing, so spacing does
// not matter) answers the first response again, with the header
// Idempotent-Replayed: true, and changes nothing. A reused key with a
// different body answers 422. Concurrent requests with one key are
// serialized by the key's row lock: one applies, the other replays. Errors
// are JSON: {"error":"..."}.
//
// Its tables (warehouse_requests, warehouse_effects) are migrated by
// Migrations, with their own version table.
//
//	srv, err := server.New(server.Config{Addr: "127.0.0.1:8081", DB: db})
//	if err != nil { ... }
//	err = srv.Run(ctx) // returns nil after a graceful shutdown once ctx is cancelled
package server
