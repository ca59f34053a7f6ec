package walsource_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/herald-outbox/herald/relay/streamtest"
	"github.com/herald-outbox/herald/relay/walsource"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// TestConformance runs the stream sources' conformance suite on
// PostgreSQL's WAL, each test with a database and a slot of its own.
func TestConformance(t *testing.T) {
	streamtest.Run(t, func(t testing.TB, chunk int) streamtest.Harness {
		d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
		cfg := wal.Config{URL: d.DSN, ChunkEvents: chunk}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, _, err := wal.Drop(ctx, d.DB, cfg, true); err != nil {
				t.Errorf("drop the slot: %v", err)
			}
		})
		src, err := walsource.New(ctx, d.DB, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.Exec(t, "CREATE TABLE neighbour (id bigserial PRIMARY KEY, note text NOT NULL)")
		return streamtest.Harness{
			DB: d.DB, Dialect: d.Dialect, Source: src,
			WriteNeighbour: func(t testing.TB) { d.Exec(t, "INSERT INTO neighbour (note) VALUES ('busy')") },
			Lose: func(t testing.TB, position string) string {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if slot, _, err := wal.Drop(ctx, d.DB, cfg, false); err != nil || !slot {
					t.Fatalf("drop the slot: %v (dropped: %v)", err, slot)
				}
				return position
			},
		}
	})
}
