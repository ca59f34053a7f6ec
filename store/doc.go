// Package store is herald's dialect-free core of the outbox database: every
// decision about an outbox row is Go here, and a database is a Dialect of
// SQL primitives that decide nothing. It holds the relay's cycle — a turn at
// the bucket table (Rebalance, the leases of invariant C1), a claim that
// keeps per-aggregate order (Claim, planner.go), the settlement of a
// published batch fenced by the lease (Settle, F1) — and what the
// operators' tools and the console read and do (status, quarantine retry
// and discard, replay, cleanup, event search).
//
// Start at Store (store.go) and the Dialect interfaces (dialect.go). The
// dialects live below it, one package per database:
//
//	store/mysql     MySQL 8.0+ and MariaDB 10.6+
//	store/postgres  PostgreSQL 14+
//	store/storetest the conformance suite every dialect passes
//
// docs/design.md holds the state machine of a row and the invariants these
// operations keep; its index names each one.
//
//	db, err := mysql.Open(ctx, dsn) // or postgres.Open with a postgres:// URL
//	if err != nil { ... }
//	st := store.New(db, mysql.Dialect{}) // mysql.NewStore(db) is the same
//	list, err := st.ListQuarantined(ctx, store.QuarantineFilter{Limit: 100})
//
// A relay's turn (relay.Relay runs it; the lease defaults to relay.LeaseDefault, 8 s):
//
//	rb, err := st.Rebalance(ctx, store.RebalanceRequest{RelayID: "relay-1", Lease: 8 * time.Second})
//	claim, err := st.Claim(ctx, store.ClaimRequest{Ownership: rb.Ownership, Limit: 500})
package store
