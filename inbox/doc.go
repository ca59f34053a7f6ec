// Package inbox consumes herald's Kafka topics and applies every event
// exactly once to the consumer's own database.
//
// For each record, in one database transaction: insert the event id into
// consumed_events (herald's migrations create it) and, unless it was already
// there, run the handler with that same transaction; commit; only then may
// the Kafka offset be committed. Delivery is at least once; the inbox turns
// it into an effect exactly once. Records of a partition are handled in
// order, one goroutine per assigned partition; a rebalance never commits an
// offset past a record whose transaction did not commit.
//
//	c, err := inbox.New(inbox.Config{
//		ConsumerName: "inventory",
//		Brokers:      []string{"127.0.0.1:9092"},
//		Topics:       []string{"orders.v1"},
//		DB:           db, // *sql.DB of the consumer's own database
//		Dialect:      mysql.Dialect{},
//		Registry:     contract.NewRegistry(),
//		Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
//			order := m.Payload.(contract.OrderCreatedV1)
//			_, err := tx.ExecContext(ctx, "INSERT INTO reservations ...", order.OrderID)
//			return err
//		}),
//	})
//	if err != nil { ... }
//	err = c.Run(ctx) // returns nil after ctx is cancelled and the work at hand is drained
//
// Records in Debezium's or CloudEvents' format (a team moving from
// Debezium's Outbox Event Router keeps its consumers) take Config.Format
// instead of a Registry: the event id comes from Debezium's "id" header or
// from the CloudEvent's id, and the handler reads the raw Message.Data. A
// consumer written for Debezium's records sets Format (and TypeHeader, to
// see the type); the rest is the same:
//
//	c, err := inbox.New(inbox.Config{
//		ConsumerName: "inventory",
//		Brokers:      []string{"127.0.0.1:9092"},
//		Topics:       []string{"outbox.event.order"},
//		DB:           db,
//		Dialect:      mysql.Dialect{},
//		Format:       inbox.FormatDebezium,
//		TypeHeader:   "eventType", // table.fields.additional.placement=type:header:eventType
//		Handler: inbox.HandlerFunc(func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
//			if m.Type != "order.created" {
//				return nil
//			}
//			var order struct{ OrderID int64 `json:"order_id"` }
//			if err := json.Unmarshal(m.Data, &order); err != nil {
//				return inbox.Permanent(err) // dead-letter it: no retry mends the payload
//			}
//			_, err := tx.ExecContext(ctx, "INSERT INTO reservations ...", order.OrderID)
//			return err
//		}),
//	})
//
// Records that can never succeed do not block their partition: a record
// that cannot be decoded (malformed, no event id, unknown type or
// version), or whose handler still fails after MaxAttempts (or returns a
// Permanent error), is produced to the dead-letter topic
// "<topic>.dlq.<consumer>" with headers naming the error class, the scrubbed
// error, the original topic, partition and offset and the consumer
// (kafka.HeaderDLQ*); once Kafka acknowledged it, the partition moves on.
// Deadlocks, lock wait timeouts and lost connections are retried without
// limit, with backoff: they pass, and the record is not at fault.
//
// BatchSize > 1 applies several records of a partition in one transaction
// (fewer commits, same guarantees); a failure inside a batch falls back to
// one record per transaction.
//
// Counters are available as a Stats snapshot, and as they happen through an
// Observer (for Prometheus; this package imports none).
//
// To replay, run the same ConsumerName in a new Group with StartAt and a
// RateLimit: records already applied are dropped by the inbox, so only the
// missing effects are applied, at a pace that leaves room for live traffic.
package inbox
