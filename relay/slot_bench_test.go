package relay_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

var (
	benchRetentionFor  = flag.Duration("relay.bench-retention", 5*time.Minute, "how long BenchmarkSlotRetention's neighbour writes")
	benchRetentionRate = flag.Int("relay.bench-retention-rate", 1_000, "BenchmarkSlotRetention's neighbour writes per second")
)

// BenchmarkSlotRetention: the WAL source's slot on an idle outbox while a
// neighbouring table of the same database takes -relay.bench-retention-rate
// rows per second (1,000 by default; ~300 bytes each, five per transaction)
// for -relay.bench-retention (5 minutes). A `herald relay --source wal`
// process streams; every second the benchmark reads the slot's retained
// WAL (the server's position less its restart_lsn) and prints the maximum,
// the last value and the WAL the neighbour wrote meanwhile: what keeps the
// slot from growing is the relay's heartbeats alone (docs/postgres-stream.md).
// A figure, not an assertion (docs/benchmarks.md, "The WAL source's slot"):
//
//	go test -run '^$' -bench BenchmarkSlotRetention -benchtime 1x -timeout 20m ./relay/
func BenchmarkSlotRetention(b *testing.B) {
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, testenv.PostgreSQL)
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 3})
	p := testenv.StartRelay(b, testenv.RelayOptions{Name: "streamer", DSN: d.DSN, Brokers: brokers,
		Topics: map[string]string{"order": topic}, Env: []string{"HERALD_SOURCE=wal"}})
	p.WaitForLog(b, `"msg":"streaming"`, 2*time.Minute)
	d.Exec(b, "CREATE TABLE neighbour (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(), note text NOT NULL)")
	slot := wal.SlotName(d.Name)
	retained := func() int64 {
		var n int64
		if err := d.DB.QueryRow(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots
			WHERE slot_name = $1`, slot).Scan(&n); err != nil {
			b.Fatalf("read slot %s: %v", slot, err)
		}
		return n
	}
	note := fmt.Sprintf("%0256d", 0)
	// Rows per transaction: one fsync'd commit per row would bound the
	// rate by the shared machine's disk, not by what the test is about.
	const perTx = 5
	ctx, cancel := context.WithTimeout(context.Background(), *benchRetentionFor)
	defer cancel()
	wal0 := logBytes(d)
	var written atomic.Int64
	var wg sync.WaitGroup
	const writers = 4
	for range writers {
		wg.Go(func() {
			tick := time.NewTicker(time.Second * writers * perTx / time.Duration(*benchRetentionRate))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := d.DB.ExecContext(ctx, "INSERT INTO neighbour (note) SELECT $1 FROM generate_series(1, $2)", note, perTx); err != nil {
					if ctx.Err() == nil {
						b.Errorf("neighbour insert: %v", err)
					}
					return
				}
				written.Add(perTx)
			}
		})
	}
	b.ResetTimer()
	start := time.Now()
	var peak, last int64
	sample := time.NewTicker(time.Second)
	defer sample.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-sample.C:
		}
		last = retained()
		peak = max(peak, last)
		if s := int(time.Since(start).Seconds()); s%30 == 0 || done {
			fmt.Printf("slot retention +%3ds: retained %6.2f MiB (peak %6.2f MiB), neighbour %d writes\n", s,
				float64(last)/(1<<20), float64(peak)/(1<<20), written.Load())
		}
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	walWritten := logBytes(d) - wal0
	rate := float64(written.Load()) / elapsed.Seconds()
	fmt.Printf("\n| idle outbox, neighbour %.0f writes/s for %v | WAL written | slot retained, peak | at the end |\n| --- | ---: | ---: | ---: |\n",
		rate, elapsed.Round(time.Second))
	fmt.Printf("| --source wal, defaults | %.1f MiB | %.2f MiB | %.2f MiB |\n", float64(walWritten)/(1<<20),
		float64(peak)/(1<<20), float64(last)/(1<<20))
	b.ReportMetric(float64(peak)/(1<<20), "peak-retained-MiB")
	b.ReportMetric(rate, "neighbour-writes/s")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	if exit := p.Wait(b, 30*time.Second); exit.Code != 0 {
		b.Errorf("the relay exited with %v after SIGTERM:\n%s", exit, p.Tail(20))
	}
}
