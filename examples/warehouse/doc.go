// Command warehouse runs the warehouse service: the external API the
// inventory example calls with idempotency keys (see package
// examples/warehouse/server for the endpoints).
//
//	go run ./examples/warehouse
//
// Environment:
//
//	HERALD_WAREHOUSE_ADDR       listen address (default 127.0.0.1:8081)
//	HERALD_WAREHOUSE_MYSQL_DSN  its database (default HERALD_MYSQL_DSN, then
//	                            herald:herald@tcp(127.0.0.1:3306)/herald)
//	HERALD_MYSQL_TLS*, HERALD_MYSQL_PASSWORD[_FILE]
//	                            database TLS and password, as herald's --mysql-* flags
//	HERALD_LOG_LEVEL            debug, info (default), warn or error
//
// It applies its own migrations (table warehouse_schema_migrations) at
// start, logs JSON to stderr, and on SIGTERM or SIGINT finishes in-flight
// requests and exits 0.
package main
