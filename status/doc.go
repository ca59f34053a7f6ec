// Package status gathers what the operator looks at first: the outbox
// backlog by state with the oldest ages, the events a Kafka configuration
// failure stops, failures by class, quarantined events, the relays and
// their bucket leases, the change stream's leader and position, and, from
// Kafka, the partitions and the consumer groups' lag. `herald status`
// (text and --json) and the web console's overview (package console) show
// the same Report, so they say the same things in the same words.
//
// Everything is read through the store (store.Store) and kafka packages:
// no state of an event is decided here.
//
//	st := store.New(db, mysql.Dialect{})
//	rep, err := status.Read(ctx, st)
//	if err != nil {
//		return err
//	}
//	_ = rep.ReadKafka(ctx, adm, []string{"orders.v1"}, nil) // recorded in rep.KafkaError
//	return rep.WriteText(os.Stdout)
package status
