// Package verify checks, independently of the relay, that what reached a
// Kafka topic is what the outbox committed: every committed event at least
// once, no event of a rolled-back transaction, and per aggregate the order
// of first occurrences equal to the outbox order (aggregate_seq).
//
// Start at Check; CheckPipeline does the same for the example shop's
// databases (orders, inventory, warehouse) against each other, for the
// drills. The topic is read by kcat (librdkafka), not by herald's franz-go
// code, and the outbox rows are read with plain SQL, so a bug shared by the
// relay and its tests cannot hide itself:
//
//	records, err := verify.ReadTopic(ctx, brokers, topic)
//	rows, err := verify.LoadOutbox(ctx, db)
//	report := verify.Check(verify.Input{Committed: verify.Events(rows, nil), RolledBack: ids, Records: records})
//	if !report.OK() {
//		t.Error(report)
//	}
package verify
