// Package storetest is the conformance suite of herald's store: every
// behaviour of store.Store over a store.Dialect, exercised against a real
// database. A dialect package runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) storetest.Harness { ... })
//	}
//
// A dialect that passes it is a dialect herald supports. The suite reads
// and changes rows only through store.Store, outbox.Writer and the
// Harness's hooks, never with SQL of its own.
//
// Start at Run and Harness; the tests themselves are grouped by concern
// (claim.go, events.go, ops.go, stream.go, ...).
package storetest
