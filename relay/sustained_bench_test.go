package relay_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
)

var benchSustainedFor = flag.Duration("relay.bench-sustained", time.Minute, "how long the sustained benchmark's writers write, per variant")

// sustainedWriters write at once, each committing sustainedPerTx events
// per transaction as fast as it can: enough to keep MariaDB's commits busy
// on the two-core machine (more only queue on group commit).
const (
	sustainedWriters = 8
	sustainedPerTx   = 10
)

// sustainedVariant is one relay setting benchSustained compares; relays 0
// is the writers alone, whose costs are the baseline.
type sustainedVariant struct {
	name   string
	relays int
	opts   benchRelay
}

var sustainedVariants = []sustainedVariant{
	{"writers alone", 0, benchRelay{}},
	{"poll, 1 relay", 1, benchRelay{}},
	{"poll, 2 relays", 2, benchRelay{}},
	{"binlog, 1 relay", 1, benchRelay{stream: true}},
}

// sustainedSample is one variant's figures over the window.
type sustainedSample struct {
	written, published float64 // events/s; published: records on the topic
	backlog            int     // written but not on the topic at the end of the window
	cpu                float64 // MariaDB CPU ms per 1,000 events written
	log                float64 // binlog bytes per event written
	rows               float64 // rows written per event written (Handler_write + _update + _delete)
}

// benchSustained: writers commit 1 KiB events as fast as they can for
// -relay.bench-sustained while the relays of each variant publish, in
// interleaved repetitions. A relay keeps up while its backlog stays flat:
// then it publishes what the writers write, and its rate is the writers'.
// The database's costs per event (CPU, binlog bytes, rows written) are
// measured over the window; minus those of the writers alone, they are the
// relay's. MariaDB only: the sources differ there.
func benchSustained(b *testing.B) {
	samples := map[string][]sustainedSample{}
	for rep := 1; rep <= benchReps(); rep++ {
		for _, v := range sustainedVariants {
			s := sustainedOnce(b, v)
			samples[v.name] = append(samples[v.name], s)
			fmt.Printf("rep %d sustained %-16s written %6.0f/s, published %6.0f/s, backlog at the end %6d; per 1,000 events written: MariaDB CPU %4.0f ms, binlog %5.0f KB, rows written %5.0f\n",
				rep, v.name, s.written, s.published, s.backlog, s.cpu, s.log, s.rows)
		}
	}
	base := samples[sustainedVariants[0].name]
	baseOf := func(f func(sustainedSample) float64) float64 { return median(base, f) }
	fmt.Printf("\n| writers at full speed for %v, %d writers × %d events per transaction (medians of %d) | written/s | published/s | backlog at the end | relay's MariaDB CPU ms per 1,000 events | relay's binlog KB per 1,000 events | relay's rows written per event |\n",
		*benchSustainedFor, sustainedWriters, sustainedPerTx, benchReps())
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, v := range sustainedVariants {
		ss := samples[v.name]
		m := func(f func(sustainedSample) float64) float64 { return median(ss, f) }
		written, published := m(func(s sustainedSample) float64 { return s.written }), m(func(s sustainedSample) float64 { return s.published })
		backlog := m(func(s sustainedSample) float64 { return float64(s.backlog) })
		if v.relays == 0 {
			fmt.Printf("| %s | %.0f | - | - | (%.0f in all) | (%.0f in all) | (%.2f in all) |\n", v.name, written,
				baseOf(func(s sustainedSample) float64 { return s.cpu }), baseOf(func(s sustainedSample) float64 { return s.log }),
				baseOf(func(s sustainedSample) float64 { return s.rows })/1000)
			continue
		}
		relayOnly := func(f func(sustainedSample) float64) float64 { return m(f) - baseOf(f) }
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |\n", v.name, written, published, backlog,
			relayOnly(func(s sustainedSample) float64 { return s.cpu }), relayOnly(func(s sustainedSample) float64 { return s.log }),
			relayOnly(func(s sustainedSample) float64 { return s.rows })/1000)
		b.ReportMetric(published, strings.NewReplacer(", ", "-", " ", "-").Replace(v.name)+"-published/s")
	}
}

// sustainedOnce runs one variant on a fresh database and topic.
func sustainedOnce(b *testing.B, v sustainedVariant) sustainedSample {
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, testenv.MariaDB)
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
	if v.relays > 0 {
		stop := runRelaysWith(b, d, brokers, topic, v.relays, &claimStats{}, v.opts)
		defer stop()
		// Past the first turn at the bucket table (and the stream's start).
		<-time.After(2 * time.Second)
	}
	w, err := outbox.NewWriter(outbox.Config{Dialect: d.Dialect})
	if err != nil {
		b.Fatal(err)
	}
	rowsWritten := func() float64 {
		var total float64
		for _, name := range []string{"Handler_write", "Handler_update", "Handler_delete"} {
			var n float64
			if err := d.DB.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(new(string), &n); err != nil {
				b.Fatal(err)
			}
			total += n
		}
		return total
	}

	ctx, cancel := context.WithTimeout(context.Background(), *benchSustainedFor)
	defer cancel()
	var written atomic.Int64
	var wg sync.WaitGroup
	log0, cpu0, rows0 := logBytes(d), serverCPU(testenv.MariaDB), rowsWritten()
	start := time.Now()
	for wr := range sustainedWriters {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(wr), 1))
			for n := 0; ; n++ {
				events := make([]outbox.Event, sustainedPerTx)
				for i := range events {
					agg := aggName(rnd.IntN(benchAggregates))
					events[i] = outbox.Event{AggregateType: "order", AggregateID: agg, EventType: "order.updated",
						SchemaVersion: 1, Payload: json.RawMessage(benchPayload(agg, n, rnd))}
				}
				tx, err := d.DB.BeginTx(ctx, nil)
				if err != nil {
					return // the window closed
				}
				if _, err := w.Add(ctx, tx, events...); err != nil {
					tx.Rollback()
					return
				}
				if err := tx.Commit(); err != nil {
					return
				}
				written.Add(int64(len(events)))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	log1, cpu1, rows1 := logBytes(d), serverCPU(testenv.MariaDB), rowsWritten()
	// What reached the topic (a duplicate counts, they are rare here): the
	// measure for every source alike. A stream's rows count as published
	// only once its watermark passes them, which lags by a second or two.
	offs, err := kafka.EndOffsets(context.Background(), testenv.NewAdmin(b, brokers), topic)
	if err != nil {
		b.Fatal(err)
	}
	var onTopic int64
	for _, o := range offs {
		onTopic += o.End
	}
	n := float64(written.Load())
	backlog := max(int(written.Load()-onTopic), 0)
	return sustainedSample{
		written:   n / elapsed.Seconds(),
		published: (n - float64(backlog)) / elapsed.Seconds(),
		backlog:   backlog,
		cpu:       float64(cpu1-cpu0) / float64(time.Millisecond) / n * 1000,
		log:       float64(log1-log0) / n, // bytes per event = KB per 1,000
		rows:      (rows1 - rows0) / n * 1000,
	}
}
