package binlog_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// The reader's delivery latency and throughput on the local stack
// (docs/binlog.md, "Measured"). Figures, not assertions; each
// sub-benchmark does its work once, so run it with -benchtime 1x:
//
//	go test -run '^$' -bench BenchmarkReader -benchtime 1x -timeout 30m ./store/mysql/binlog/
//
// BenchmarkReader/latency commits one event per transaction at 1,000
// events/s for 20 s (8 writers taking turns on a fixed schedule) and
// reports the time from COMMIT returning (and from COMMIT sent) to Next
// returning the event. BenchmarkReader/backlog writes a backlog first and
// then times a reader opened before it decoding it all.

const (
	latencyRate     = 1000
	latencyDuration = 20 * time.Second
	latencyWriters  = 8
)

func BenchmarkReader(b *testing.B) {
	b.Run("latency", benchLatency)
	b.Run("backlog-1KiB-100x1000", func(b *testing.B) { benchBacklog(b, 1000, 100, 1024) })
	b.Run("backlog-100B-1x50000", func(b *testing.B) { benchBacklog(b, 50_000, 1, 100) })
}

func benchLatency(b *testing.B) {
	e := newEnv(b)
	cfg := e.config()
	cfg.HeartbeatPeriod = time.Second
	r := openWith(b, e.db.DB, cfg, e.head(b))
	total := int(latencyDuration.Seconds() * latencyRate)

	type sent struct{ before, after time.Time }
	var mu sync.Mutex
	commits := make(map[string]sent, total)
	delivered := make(map[string]time.Time, total)

	ctx, cancel := context.WithTimeout(context.Background(), latencyDuration+2*time.Minute)
	defer cancel()
	readDone := make(chan error, 1)
	go func() {
		for len(delivered) < total {
			tx, err := r.Next(ctx)
			if err != nil {
				readDone <- err
				return
			}
			now := time.Now()
			for _, ev := range tx.Events {
				delivered[ev.ID] = now
			}
		}
		readDone <- nil
	}()

	slots := make(chan int)
	var wg sync.WaitGroup
	for range latencyWriters {
		wg.Go(func() {
			for i := range slots {
				tx, err := e.db.DB.BeginTx(ctx, nil)
				if err != nil {
					b.Error(err)
					return
				}
				ids, err := e.writer.Add(ctx, tx, orderEvent("agg-"+strconv.Itoa(i%100), i))
				if err != nil {
					b.Error(err)
					tx.Rollback()
					return
				}
				before := time.Now()
				if err := tx.Commit(); err != nil {
					b.Error(err)
					return
				}
				after := time.Now()
				mu.Lock()
				commits[ids[0]] = sent{before, after}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	timer := time.NewTimer(0)
	for i := range total {
		<-timer.C
		slots <- i
		timer.Reset(time.Until(start.Add(time.Duration(i+1) * time.Second / latencyRate)))
	}
	close(slots)
	wg.Wait()
	written := time.Since(start)
	if err := <-readDone; err != nil {
		b.Fatalf("reader: %v (%d of %d delivered)", err, len(delivered), total)
	}

	var fromReturn, fromSent []time.Duration
	for id, c := range commits {
		d := delivered[id]
		fromReturn = append(fromReturn, d.Sub(c.after))
		fromSent = append(fromSent, d.Sub(c.before))
	}
	rate := float64(total) / written.Seconds()
	fmt.Printf("latency: %d events, one per transaction, at %.0f events/s over %v\n", total, rate, written.Round(time.Millisecond))
	fmt.Printf("  COMMIT returned -> Next returned: %s\n", percentiles(fromReturn))
	fmt.Printf("  COMMIT sent     -> Next returned: %s\n", percentiles(fromSent))
	p := quantiles(fromReturn)
	b.ReportMetric(float64(p[1].Microseconds())/1000, "p99-ms")
	b.ReportMetric(rate, "events/s")
}

// percentiles renders p50, p99 and max.
func percentiles(ds []time.Duration) string {
	q := quantiles(ds)
	return fmt.Sprintf("p50 %v, p99 %v, max %v (min %v)", q[0], q[1], q[2], q[3])
}

// quantiles returns p50, p99, max and min, to 10 µs.
func quantiles(ds []time.Duration) [4]time.Duration {
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(10 * time.Microsecond) }
	return [4]time.Duration{at(0.50), at(0.99), ds[len(ds)-1].Round(10 * time.Microsecond), ds[0].Round(10 * time.Microsecond)}
}

// benchBacklog writes txs transactions of perTx events with payloads of
// about payloadSize bytes, then times a reader opened before them reading
// them all.
func benchBacklog(b *testing.B, txs, perTx, payloadSize int) {
	e := newEnv(b)
	from := e.head(b)
	fileFrom := e.fileHead(b)
	var wg sync.WaitGroup
	const loaders = 4
	for w := range loaders {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(7, uint64(w)))
			for t := w; t < txs; t += loaders {
				events := make([]outbox.Event, perTx)
				for i := range events {
					events[i] = outbox.Event{AggregateType: "order", AggregateID: "agg-" + strconv.Itoa((t*perTx+i)%1000),
						EventType: "order.created", SchemaVersion: 1, Payload: payloadOf(rnd, payloadSize)}
				}
				if _, err := writeOnce(context.Background(), e, events...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	fileTo := e.fileHead(b)
	total := txs * perTx

	cfg := e.config()
	cfg.HeartbeatPeriod = time.Second
	start := time.Now()
	r := openWith(b, e.db.DB, cfg, from)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, heartbeats := 0, 0
	for n < total {
		tx, err := r.Next(ctx)
		if err != nil {
			b.Fatalf("after %d of %d events: %v", n, total, err)
		}
		if tx.IsHeartbeat() {
			heartbeats++
		}
		n += len(tx.Events)
	}
	elapsed := time.Since(start)
	binlogBytes := bytesBetween(b, e.db.DB, fileFrom, fileTo)
	rate := float64(total) / elapsed.Seconds()
	fmt.Printf("backlog: %d events (%d transactions of %d, ~%d B payloads) read in %v: %.0f events/s, "+
		"%.1f MB/s of binlog (%.1f MB, other sessions' writes included), %d heartbeats\n",
		total, txs, perTx, payloadSize, elapsed.Round(time.Millisecond), rate,
		float64(binlogBytes)/1e6/elapsed.Seconds(), float64(binlogBytes)/1e6, heartbeats)
	b.ReportMetric(rate, "events/s")
}

func payloadOf(rnd *rand.Rand, size int) json.RawMessage {
	raw := make([]byte, max(1, (size-30)*3/4))
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	return json.RawMessage(`{"note":"` + base64.StdEncoding.EncodeToString(raw) + `"}`)
}

// bytesBetween returns the binlog bytes between two file positions.
func bytesBetween(b *testing.B, db *sql.DB, from, to binlog.Position) int64 {
	files, err := binlog.ListLogs(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	fromFile, fromOff := splitFile(from)
	toFile, toOff := splitFile(to)
	var n int64
	in := false
	for _, f := range files {
		switch {
		case f.Name == fromFile && f.Name == toFile:
			return toOff - fromOff
		case f.Name == fromFile:
			in, n = true, f.Size-fromOff
		case f.Name == toFile:
			return n + toOff
		case in:
			n += f.Size
		}
	}
	return -1
}

func splitFile(p binlog.Position) (string, int64) {
	f := file(p.String())
	off, _ := strconv.ParseInt(p.String()[len("file:")+len(f)+1:], 10, 64)
	return f, off
}
