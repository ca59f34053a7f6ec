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

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
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

// sustainedVariants are the settings compared on server: the writers
// alone, one and two polling relays, and the server's change stream with
// its default linger (0: each record sent at once) and with the polling
// relay's (fewer, larger produce requests).
func sustainedVariants(server testenv.Server) []sustainedVariant {
	return []sustainedVariant{
		{"writers alone", 0, benchRelay{}},
		{"poll, 1 relay", 1, benchRelay{}},
		{"poll, 2 relays", 2, benchRelay{}},
		{streamName(server) + ", 1 relay", 1, benchRelay{stream: true}},
		{streamName(server) + ", --linger 5ms", 1, benchRelay{stream: true, linger: kafka.LingerDefault}},
	}
}

// sustainedSample is one variant's figures over the window.
type sustainedSample struct {
	written, published float64 // events/s; published: records on the topic
	backlog            int     // written but not on the topic at the end of the window
	cpu                float64 // database CPU ms per 1,000 events written
	process            float64 // this process's CPU (writers and relays) ms per 1,000 events written
	brokers            float64 // the Kafka nodes' CPU ms per 1,000 events written
	log                float64 // binlog (MariaDB) or WAL (PostgreSQL) bytes per event written
	rows               float64 // rows written per event written
}

// benchSustained: writers commit 1 KiB events as fast as they can for
// -relay.bench-sustained while the relays of each variant publish, in
// interleaved repetitions. A relay keeps up while its backlog stays flat:
// then it publishes what the writers write, and its rate is the writers'.
// The database's costs per event (CPU, binlog bytes, rows written) are
// measured over the window; minus those of the writers alone, they are the
// relay's.
func benchSustained(b *testing.B, server testenv.Server) {
	variants := sustainedVariants(server)
	samples := map[string][]sustainedSample{}
	for rep := 1; rep <= benchReps(); rep++ {
		for _, v := range variants {
			s := sustainedOnce(b, server, v)
			samples[v.name] = append(samples[v.name], s)
			fmt.Printf("rep %d sustained %-16s written %6.0f/s, published %6.0f/s, backlog at the end %6d; per 1,000 events written: %s CPU %4.0f ms, writers' and relays' %4.0f ms, Kafka's %4.0f ms, %s %5.0f KB, rows written %5.0f\n",
				rep, v.name, s.written, s.published, s.backlog, server, s.cpu, s.process, s.brokers, logName(server), s.log, s.rows)
		}
	}
	base := samples[variants[0].name]
	baseOf := func(f func(sustainedSample) float64) float64 { return median(base, f) }
	fmt.Printf("\n| %s: writers at full speed for %v, %d writers × %d events per transaction (medians of %d) | written/s | writers keep | published/s | backlog at the end | relay's database CPU ms per 1,000 events | relay's own CPU ms per 1,000 events | Kafka's CPU ms per 1,000 events | relay's %s B per event | relay's rows written per event |\n",
		server, *benchSustainedFor, sustainedWriters, sustainedPerTx, benchReps(), logName(server))
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	alone := baseOf(func(s sustainedSample) float64 { return s.written })
	for _, v := range variants {
		ss := samples[v.name]
		m := func(f func(sustainedSample) float64) float64 { return median(ss, f) }
		written, published := m(func(s sustainedSample) float64 { return s.written }), m(func(s sustainedSample) float64 { return s.published })
		backlog := m(func(s sustainedSample) float64 { return float64(s.backlog) })
		if v.relays == 0 {
			fmt.Printf("| %s | %.0f | 100 %% | - | - | (%.0f in all) | (writers %.0f) | (%.0f idle) | (%.0f in all) | (%.2f in all) |\n", v.name, written,
				baseOf(func(s sustainedSample) float64 { return s.cpu }), baseOf(func(s sustainedSample) float64 { return s.process }),
				baseOf(func(s sustainedSample) float64 { return s.brokers }), baseOf(func(s sustainedSample) float64 { return s.log }),
				baseOf(func(s sustainedSample) float64 { return s.rows })/1000)
			continue
		}
		relayOnly := func(f func(sustainedSample) float64) float64 { return m(f) - baseOf(f) }
		fmt.Printf("| %s | %.0f | %.0f %% | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f |\n", v.name, written, written/alone*100, published, backlog,
			relayOnly(func(s sustainedSample) float64 { return s.cpu }), relayOnly(func(s sustainedSample) float64 { return s.process }),
			m(func(s sustainedSample) float64 { return s.brokers }), relayOnly(func(s sustainedSample) float64 { return s.log }),
			relayOnly(func(s sustainedSample) float64 { return s.rows })/1000)
		b.ReportMetric(published, strings.NewReplacer(", ", "-", " ", "-").Replace(v.name)+"-published/s")
	}
}

// sustainedOnce runs one variant on a fresh database and topic.
func sustainedOnce(b *testing.B, server testenv.Server, v sustainedVariant) sustainedSample {
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, server)
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

	ctx, cancel := context.WithTimeout(context.Background(), *benchSustainedFor)
	defer cancel()
	var written atomic.Int64
	var wg sync.WaitGroup
	log0, cpu0, rows0, process0, brokers0 := logBytes(d), serverCPU(server), rowsWritten(b, d), processCPU(), kafkaCPU()
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
	log1, cpu1, rows1, process1, brokers1 := logBytes(d), serverCPU(server), rowsWritten(b, d), processCPU(), kafkaCPU()
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
		cpu:       msPer1000(cpu1-cpu0, n),
		process:   msPer1000(process1-process0, n),
		brokers:   msPer1000(brokers1-brokers0, n),
		log:       float64(log1-log0) / n, // bytes per event = KB per 1,000
		rows:      (rows1 - rows0) / n * 1000,
	}
}

// rowsWritten is how many rows the server has written so far: MariaDB's
// handler writes, updates and deletes (the whole server), PostgreSQL's
// tuples inserted, updated and deleted in d's database (its cumulative
// statistics, which a backend reports within a second of going idle).
func rowsWritten(b *testing.B, d *testenv.Database) float64 {
	var n float64
	query := "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('HANDLER_WRITE', 'HANDLER_UPDATE', 'HANDLER_DELETE')"
	if d.Server == testenv.PostgreSQL {
		query = "SELECT tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname = current_database()"
	}
	if err := d.DB.QueryRow(query).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// msPer1000 is cpu in milliseconds per 1,000 of n events.
func msPer1000(cpu time.Duration, n float64) float64 {
	return float64(cpu) / float64(time.Millisecond) / n * 1000
}
