// Command inventory runs the inventory consumer (package
// examples/inventory/stock): it reserves stock for every order.created and
// releases it for every order.cancelled, exactly once per event however
// often Kafka delivers it, and tells the warehouse service about each
// reservation and release after its own transaction committed, with the
// event id as the Idempotency-Key.
//
//	go run ./examples/warehouse &
//	go run ./examples/inventory
//
// Environment:
//
//	HERALD_MYSQL_DSN                  database (default herald:herald@tcp(127.0.0.1:3306)/herald)
//	HERALD_KAFKA_BROKERS              seed brokers, comma-separated (default 127.0.0.1:9092)
//	HERALD_KAFKA_TLS, HERALD_KAFKA_TLS_CA_FILE, _CERT_FILE, _KEY_FILE, _SERVER_NAME,
//	HERALD_KAFKA_SASL_MECHANISM, _USERNAME, _PASSWORD_FILE or _PASSWORD
//	                                  Kafka TLS, mutual TLS and SASL, as herald's --kafka-* flags (docs/security.md)
//	HERALD_MYSQL_TLS, HERALD_MYSQL_TLS_CA_FILE, _CERT_FILE, _KEY_FILE, _SERVER_NAME,
//	HERALD_MYSQL_PASSWORD_FILE or HERALD_MYSQL_PASSWORD
//	                                  database TLS and a password kept out of the DSN, as herald's --mysql-* flags
//	HERALD_INVENTORY_TOPICS           topics, comma-separated (default orders.v1)
//	HERALD_INVENTORY_CONSUMER         inbox consumer name (default inventory)
//	HERALD_INVENTORY_GROUP            Kafka consumer group (default the consumer name)
//	HERALD_WAREHOUSE_URL              warehouse base URL (default http://127.0.0.1:8081)
//	HERALD_INVENTORY_ADDR             /healthz and /stats address (default 127.0.0.1:9102; "-" for none)
//	HERALD_INVENTORY_BATCH_SIZE       records per transaction (default 1)
//	HERALD_INVENTORY_AUTO_PROVISION   create unknown SKUs with the default stock (default true)
//	HERALD_INVENTORY_DEFAULT_STOCK    stock of an auto-provisioned SKU (default 1000000)
//	HERALD_INVENTORY_SEED             stock created at start, e.g. SKU-1=100,SKU-2=5
//	                                  (default SKU-1..SKU-20 with 1000000 each; existing rows are kept)
//	HERALD_INVENTORY_SWEEP_INTERVAL   how often pending warehouse calls are swept (default 2s)
//	HERALD_INVENTORY_SWEEP_GRACE      age before the sweeper takes a pending call (default 5s)
//	HERALD_INVENTORY_SESSION_TIMEOUT  Kafka group session timeout (default 45s, at least 6s)
//	HERALD_INVENTORY_START_AT         replay: a NEW group starts at this RFC 3339 time
//	HERALD_INVENTORY_RATE_LIMIT       records per second, for replays (default unlimited)
//	HERALD_LOG_LEVEL                  debug, info (default), warn or error
//	HERALD_FAILPOINTS                 crash drills, e.g. consumer.after_commit_before_offset=crash
//
// At start it applies herald's migrations (for consumed_events) and its own
// (table inventory_schema_migrations) and seeds stock. It logs JSON to
// stderr. On SIGTERM or SIGINT it finishes the transaction and the warehouse
// call at hand, commits its offsets, leaves the group and exits 0.
package main
