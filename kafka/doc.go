// Package kafka is herald's plumbing over franz-go, shared by the relay,
// the inbox, the CLI and the console: the producer every relay publishes
// with (NewProducer: acks=all, idempotent, the record limits of limits.go),
// the consumer-group loop and dead-letter writer the inbox runs on
// (Consumer, DLQWriter), topic administration (EnsureTopic, which adds
// partitions, and so remaps keys, only when told; CompareTopic,
// EnsureReplayTopic, DescribeTopics), offsets and consumer lag (EndOffsets,
// GroupLag), the classes of Kafka errors the relay and the quarantine
// speak (Classify, Classes, IsConfiguration), and the connection's TLS and
// SASL settings (Security, SecurityFromEnv).
//
// Start at ProducerConfig and Security:
//
//	opts, err := kafka.Security{CAFile: "ca.pem"}.Options()
//	if err != nil { ... }
//	producer, err := kafka.NewProducer(kafka.ProducerConfig{
//		Brokers:       []string{"127.0.0.1:9092"},
//		ClientOptions: opts,
//	})
//	if err != nil { ... }
//	defer producer.Close()
package kafka
