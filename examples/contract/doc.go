// Package contract holds the Go types of the events the examples exchange
// on the orders topic, as their consumers read them, and the registry that
// decodes them by (type, version).
//
//	reg := contract.NewRegistry()
//	ev, err := reg.Decode(record.Value)
//	if err != nil { ... } // envelope.ErrorClass(err) says why
//	switch p := ev.Payload.(type) {
//	case contract.OrderCreatedV1:
//		_ = p.Items
//	case contract.OrderCancelledV1:
//		_ = p.OrderID
//	}
//
// The JSON of every type and version is pinned by the golden files in
// envelope/testdata: removing or renaming a field fails the contract test.
// Fields are only added; a change of meaning is a new version, registered
// next to the old one. Money is a decimal string ("19.98"), never a float.
package contract
