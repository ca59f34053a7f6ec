// Package migrations holds the orders example's schema: embedded goose SQL
// with its own version table, applied next to herald's own schema.
package migrations

import (
	"embed"
	"io/fs"

	herald "github.com/herald-outbox/herald/migrations"
)

//go:embed *.sql postgres/*.sql
var sqlFiles embed.FS

// Orders is the example's schema: orders, order_items and idempotency_keys
// (MySQL's files at the root, PostgreSQL's in postgres/). Its versions are
// recorded in orders_schema_migrations, apart from herald's.
var Orders = herald.Set{Name: "orders", Table: "orders_schema_migrations", FS: fs.FS(sqlFiles), PostgresFS: mustSub(sqlFiles, "postgres")}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
