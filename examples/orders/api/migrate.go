package api

import (
	"context"
	"database/sql"

	ordersmigrations "github.com/herald-outbox/herald/examples/orders/migrations"
	"github.com/herald-outbox/herald/migrations"
)

// Migrate applies herald's schema (the outbox) and the example's own
// (orders, order_items, idempotency_keys) to db. It is idempotent and safe
// to run from several processes at once.
func Migrate(ctx context.Context, db *sql.DB) error {
	for _, set := range []migrations.Set{migrations.Herald, ordersmigrations.Orders} {
		if _, err := set.Up(ctx, db); err != nil {
			return err
		}
	}
	return nil
}
