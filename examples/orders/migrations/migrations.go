// Package migrations holds the orders example's schema: embedded goose SQL
// with its own version table, applied next to herald's own schema.
package migrations

import (
	"embed"
	"io/fs"

	herald "github.com/herald-outbox/herald/migrations"
)

//go:embed *.sql
var sqlFiles embed.FS

// Orders is the example's schema: orders, order_items and idempotency_keys.
// Its versions are recorded in orders_schema_migrations, apart from herald's.
var Orders = herald.Set{Name: "orders", Table: "orders_schema_migrations", FS: fs.FS(sqlFiles)}
