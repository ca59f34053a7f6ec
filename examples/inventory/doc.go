// Command inventory runs the inventory consumer (package
// examples/inventory/stock): it reserves stock for every order.created and
// releases it for every order.cancelled, exactly once per event however
// often Kafka delivers it, and tells the warehouse service about each
// reservation and release after its own transaction committed, with the
// event id as the Idempotency-Key.
//
//	go run ./examples/warehouse &
//	go run ./examples/inventory
//	go run ./examples/inventory --help   # its settings
//
// Its settings come from the environment: `inventory --help` lists them.
//
// At start it applies herald's migrations (for consumed_events) and its own
// (table inventory_schema_migrations) and seeds stock. It logs JSON to
// stderr. On SIGTERM or SIGINT it finishes the transaction and the warehouse
// call at hand, commits its offsets, leaves the group and exits 0.
package main
