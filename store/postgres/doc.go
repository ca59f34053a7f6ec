// Package postgres is herald's dialect for PostgreSQL 14+: the SQL
// primitives of store.Dialect, and opening connections (pgx through
// database/sql) that agree with Go on time. It decides nothing; package
// store does.
//
//	db, err := postgres.Open(ctx, "postgres://app:secret@db:5432/app")
//	st := postgres.NewStore(db) // store.New(db, postgres.Dialect{})
//	w, err := outbox.NewWriter(outbox.Config{Dialect: postgres.Dialect{}})
//
// Every time column is timestamptz and every statement reads the clock with
// statement_timestamp(): an instant, whatever the session's TimeZone, so a
// caller's connection in another zone (the outbox writer and the inbox run
// on the caller's own transactions) stores the instants herald's
// connections compare against. now() would be the transaction's start, and
// clock_timestamp() changes from row to row and cannot bound an index scan.
//
// The writer's and the inbox's statements use only scalar parameters and
// recognise errors by SQLSTATE (an error's SQLState() method, as pgx's
// have), so the caller's transaction may be pgx's stdlib or another
// database/sql driver that reports SQLSTATE that way. herald's own
// connections must come from Open: the relay's statements pass arrays.
package postgres
