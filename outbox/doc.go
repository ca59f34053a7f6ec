// Package outbox is herald's write path: it adds events to the caller's own
// database transaction, so the business change and its events commit
// together or not at all. It needs only the standard library's database/sql
// and your database's driver (MySQL or MariaDB, or PostgreSQL through pgx's
// stdlib); the relay (package relay) publishes the committed events to
// Kafka afterwards. Start at Writer.Add.
//
// Apply herald's schema first (`herald migrate up`, or migrations.Herald.Up).
// Then, inside your transaction (on MySQL; on PostgreSQL the placeholders
// are $1, $2 and the order's id comes from INSERT ... RETURNING id):
//
//	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
//	if err != nil { ... }
//
//	tx, err := db.BeginTx(ctx, nil)
//	if err != nil { ... }
//	defer tx.Rollback() // a no-op after Commit
//
//	res, err := tx.ExecContext(ctx, "INSERT INTO orders (customer_id, total_amount) VALUES (?, ?)", 42, "19.98")
//	if err != nil { ... }
//	orderID, _ := res.LastInsertId()
//
//	payload, _ := json.Marshal(map[string]any{
//		"order_id": orderID, "customer_id": 42, "total_amount": "19.98",
//	})
//	ids, err := w.Add(ctx, tx, outbox.Event{
//		AggregateType: "order",
//		AggregateID:   strconv.FormatInt(orderID, 10),
//		EventType:     "order.created",
//		SchemaVersion: 1,
//		Payload:       payload,
//	})
//	if err != nil { ... } // a *outbox.ValidationError names the bad field
//	if err := tx.Commit(); err != nil { ... }
//	_ = ids // the events' ids, e.g. for logs
//
// Events of one aggregate reach Kafka in the order they were added; the
// AggregateID is the Kafka key. To propagate a trace, put the incoming W3C
// traceparent into the context with ContextWithTraceparent: every event
// added under that context carries it as a header.
//
// Add writes exactly the rows of the SQL contract (docs/writers.md), which
// services in other languages write with a plain INSERT: the table's
// trigger (migration 6) numbers each event in its aggregate and takes a
// lock on the aggregate's sequence counter until the transaction ends.
// Like any transaction that locks rows, yours may then fail with a
// deadlock under contention (the dialect's IsTransient says so), and should
// be retried as a whole.
//
// The Writer speaks the dialect in Config.Dialect (mysql.Dialect{} for
// MySQL and MariaDB, postgres.Dialect{} for PostgreSQL); it reads no
// setting of your connection's session. On MySQL, add
// interpolateParams=true to a busy service's DSN: each statement is then
// one round trip instead of a prepare and an execute.
package outbox
