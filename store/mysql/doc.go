// Package mysql is herald's dialect for MySQL 8.0+ and MariaDB 10.6+: the
// SQL primitives of store.Dialect, and opening connections that agree with
// Go on time (UTC). It decides nothing; package store does.
//
//	db, err := mysql.Open(ctx, dsn)
//	st := mysql.NewStore(db) // store.New(db, mysql.Dialect{})
//	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
//
// Every statement reads the clock with UTC_TIMESTAMP(6) and passes times as
// UTC text, so a caller's connection with another session time zone (the
// outbox writer and the inbox run on the caller's own transactions) stores
// the same instants herald's connections compare against.
package mysql
