package binlogsource_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/herald-outbox/herald/relay/binlogsource"
	"github.com/herald-outbox/herald/relay/streamtest"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// TestConformance runs the stream sources' conformance suite on MariaDB's
// binlog, each test with a database of its own.
func TestConformance(t *testing.T) {
	streamtest.Run(t, func(t testing.TB, chunk int) streamtest.Harness {
		d := testenv.NewHeraldDatabaseOn(t, testenv.MariaDB)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		src, err := binlogsource.NewWithConfig(ctx, d.DB, binlog.Config{DSN: d.DSN, ChunkEvents: chunk})
		if err != nil {
			t.Fatal(err)
		}
		d.Exec(t, "CREATE TABLE neighbour (id BIGINT AUTO_INCREMENT PRIMARY KEY, note TEXT NOT NULL)")
		return streamtest.Harness{
			DB: d.DB, Dialect: d.Dialect, Source: src,
			WriteNeighbour: func(t testing.TB) { d.Exec(t, "INSERT INTO neighbour (note) VALUES ('busy')") },
			// A binlog file the server purged long ago (its first): what a
			// checkpoint older than the server's binlogs names.
			Lose: func(testing.TB, string) string { return "file:mariadb-bin.000000:4" },
		}
	})
}
