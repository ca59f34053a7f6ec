// Package relay publishes committed outbox events to Kafka: it claims them
// in batches from the buckets it leases (or, with a change-stream Source, reads
// them from the database's change stream as they commit), produces them
// with acks=all and the idempotent producer, and marks them published
// after the acknowledgement. Delivery is at least once; per aggregate,
// events first reach Kafka in the order they were written, with any number
// of relays (docs/design.md, O1, says why).
//
// Start at Service (service.go), which wires everything below; Relay
// (relay.go) is the claim-publish-settle loop, stream.go its change-stream
// side (store/mysql/binlog and store/postgres/wal are the sources),
// publish.go the ordered publisher, and Cleaner and Replayer the
// background cleanup and herald replay.
//
// `herald relay` runs it as a process. To run it inside your own service
// instead, give a Service your database and a producer; it wires the relay,
// the backlog gauges, the optional cleanup and the /healthz, /readyz and
// /metrics endpoints, exactly as `herald relay` does:
//
//	db, err := mysql.Open(ctx, dsn) // package store/mysql: adds UTC settings
//	// or, with TLS and the password kept out of the DSN (docs/security.md):
//	// mysql.OpenWith(ctx, dsn, mysql.ConnOptions{TLSCAFile: "db-ca.pem", PasswordFile: "/run/secrets/db"})
//	if err != nil { ... }
//	defer db.Close()
//	if _, err := migrations.Herald.Up(ctx, db); err != nil { ... }
//
//	// TLS and SASL, when the cluster asks for them; every file is read here.
//	kafkaOpts, err := kafka.Security{CAFile: "ca.pem", SASLMechanism: kafka.SASLScramSHA512,
//		SASLUsername: "relay", SASLPasswordFile: "/run/secrets/kafka"}.Options()
//	if err != nil { ... }
//	producer, err := kafka.NewProducer(kafka.ProducerConfig{
//		Brokers:         []string{"127.0.0.1:9092"},
//		DeliveryTimeout: relay.LeaseDefault * 2 / 3, // well inside the lease, as herald relay sets it
//		ClientOptions:   kafkaOpts,
//	})
//	if err != nil { ... }
//	defer producer.Close()
//
//	svc, err := relay.NewService(relay.ServiceConfig{
//		Relay:       relay.Config{Topics: map[string]string{"order": "orders.v1"}},
//		Cleaner:     relay.CleanerConfig{Retention: 7 * 24 * time.Hour}, // zero: no cleanup
//		MetricsAddr: "127.0.0.1:9101",                                 // empty: no endpoints
//	}, mysql.NewStore(db), producer)
//	if err != nil { ... } // a *relay.ConfigError names each bad field
//	err = svc.Run(ctx)     // until ctx is cancelled and everything it started has stopped
//
// /readyz answers 503 while the database or Kafka does not answer, and while
// a configuration failure (Relay.ConfigurationFailure: Kafka refuses the
// relay's credentials, certificate or a topic) stops publishing.
//
// examples/embed is this as a program. Run as many relays as you like,
// embedded or not: they share the work without sharing an aggregate's
// events. Relay, Cleaner and Replayer are the parts on their own, for
// callers that wire them differently.
package relay
