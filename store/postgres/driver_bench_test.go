package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// BenchmarkDriverPath measures what going through database/sql (pgx's
// stdlib, which the store core and the writer use) costs over pgx's native
// interface, for the relay's most frequent statement (the claim's read of
// 200 ready events in full) and for a one-row write. Figures, not a test:
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

	claim, args := postgres.ReadyQuery(store.ReadyRequest{Limit: 200})
	b.Run("claim-read/database-sql", func(b *testing.B) {
		for range b.N {
			rows, err := d.DB.QueryContext(ctx, claim, args...)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var r readyRow
				if err := rows.Scan(r.dest()...); err != nil {
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
			rows, err := native.Query(ctx, claim, args...)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var r readyRow
				if err := rows.Scan(r.dest()...); err != nil {
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

// readyRow is one row of the claim's read, in the types both interfaces
// scan into.
type readyRow struct {
	id, typ, agg, eventType, class string
	seq                            int64
	schema, attempts, bucket       int
	payload, headers               []byte
	occurred, next                 time.Time
}

func (r *readyRow) dest() []any {
	return []any{&r.id, &r.typ, &r.agg, &r.seq, &r.eventType, &r.schema, &r.payload, &r.headers,
		&r.occurred, &r.attempts, &r.class, &r.bucket, &r.next}
}
