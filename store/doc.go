// Package store is herald's dialect-free core of the outbox database: the
// claim planner that keeps per-aggregate order, the settlement of a
// published batch (marks, failures, quarantines, releases, all fenced by
// the lease), and the operators' actions (status, quarantine, replay,
// cleanup). It decides; the SQL lives below it, in one package per
// database implementing Dialect:
//
//	store/mysql     MySQL 8.0+ and MariaDB 10.6+
//	store/storetest the conformance suite every dialect passes
//
// docs/design.md explains the state machine and the invariants these
// operations keep.
//
//	db, err := mysql.Open(ctx, dsn)
//	st := store.New(db, mysql.Dialect{})
//	claim, err := st.Claim(ctx, store.ClaimRequest{RelayID: "relay-1", Limit: 500, Lease: 30 * time.Second})
package store
