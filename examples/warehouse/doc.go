// Command warehouse runs the warehouse service: the external API the
// inventory example calls with idempotency keys (see package
// examples/warehouse/server for the endpoints).
//
//	go run ./examples/warehouse
//	go run ./examples/warehouse --help   # its settings (environment variables)
//
// It applies its own migrations (table warehouse_schema_migrations) at
// start, logs JSON to stderr, and on SIGTERM or SIGINT finishes in-flight
// requests and exits 0.
package main
