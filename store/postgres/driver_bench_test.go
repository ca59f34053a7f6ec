package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store/postgres"
)

// BenchmarkDriverPath measures what going through database/sql (pgx's
// stdlib, which the store core and the writer use) costs over pgx's native
// interface, for the relay's most frequent statement (the claim's candidate
// read, 200 rows) and for a one-row write. Figures, not a test:
//
//	go test -run '^$' -bench DriverPath -benchtime 2000x ./store/postgres
func BenchmarkDriverPath(b *testing.B) {
	d := testenv.NewHeraldDatabaseOn(b, testenv.PostgreSQL)
	aggs := make([]string, 1000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 100)
	}
	d.AddEvents(b, testenv.OrderEvents(aggs...)...)
	d.Exec(b, "CREATE TABLE bench_kv (k bigint PRIMARY KEY, v text)")
	ctx := context.Background()
	cfg, err := postgres.ParseURL(d.DSN)
	if err != nil {
		b.Fatal(err)
	}
	native, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { native.Close(context.Background()) })
	d.DB.SetMaxOpenConns(1)

	b.Run("claim-read/database-sql", func(b *testing.B) {
		for range b.N {
			rows, err := d.DB.QueryContext(ctx, postgres.ClaimQuery, 200)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id, typ, agg string
				var seq uint64
				if err := rows.Scan(&id, &typ, &agg, &seq); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != 200 {
				b.Fatalf("%d rows", n)
			}
		}
	})
	b.Run("claim-read/pgx-native", func(b *testing.B) {
		for range b.N {
			rows, err := native.Query(ctx, postgres.ClaimQuery, 200)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id, typ, agg string
				var seq int64
				if err := rows.Scan(&id, &typ, &agg, &seq); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != 200 {
				b.Fatalf("%d rows", n)
			}
		}
	})
	k := int64(0)
	b.Run("write/database-sql", func(b *testing.B) {
		for range b.N {
			k++
			if _, err := d.DB.ExecContext(ctx, "INSERT INTO bench_kv VALUES ($1, $2)", k, "v"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/pgx-native", func(b *testing.B) {
		for range b.N {
			k++
			if _, err := native.Exec(ctx, "INSERT INTO bench_kv VALUES ($1, $2)", k, "v"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
