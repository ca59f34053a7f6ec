// Package envelope is herald's wire contract: the JSON value of every Kafka
// record the relay publishes.
//
//	{"event_id":"0190f1c2-...","type":"order.created","version":1,
//	 "occurred_at":"2026-09-26T02:12:30.123456Z",
//	 "data":{"order_id":9182,"customer_id":42,"total_amount":"199.00"}}
//
// The record's key is the aggregate id; its headers repeat the event id,
// type, version, aggregate type and aggregate sequence (Header* constants),
// plus the event's own headers such as a W3C traceparent.
//
// Compatibility rules: fields are only added, never removed or renamed;
// consumers ignore fields they do not know and parse data by (type, version).
// Money is a decimal string ("19.98"), never a float.
//
// Consumers decode with a Registry, which dispatches on (type, version):
//
//	reg := envelope.NewRegistry()
//	envelope.Register[OrderCreatedV1](reg, "order.created", 1)
//
//	ev, err := reg.Decode(record.Value)
//	switch envelope.ErrorClass(err) {
//	case "": // ev.Payload is an OrderCreatedV1
//	case envelope.ClassUnsupportedVersion: // a newer producer: dead-letter it
//	}
//
// Every error of Decode is a *DecodeError wrapping one of ErrMalformed,
// ErrMissingID, ErrMissingType, ErrMissingVersion, ErrUnknownType or
// ErrUnsupportedVersion. docs/contracts.md is the contract in prose.
package envelope
