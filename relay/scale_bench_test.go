package relay_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// The drains are interleaved: repetition after repetition, every variant
// once, so a noisy minute of the shared machine hits them all alike; the
// table shows medians. HERALD_BENCH_REPS sets the repetitions (default 3).

// drainVariant is one way to drain the backlog; prepare, when set, runs
// on the empty outbox before the backlog is loaded.
type drainVariant struct {
	name    string
	run     func(b *testing.B, d *testenv.Database, brokers []string, topic string) string
	prepare func(b *testing.B, d *testenv.Database, brokers []string, topic string)
}

// drainSample is one drain's figures.
type drainSample struct {
	rate      float64 // events/s
	log       float64 // log bytes (ROW binlog, WAL) per event, -1 unknown
	dbCPU     float64 // database server CPU seconds per 100,000 events, -1 unknown
	processMS float64 // this process's CPU ms per 1,000 events (relays and the benchmark)
}

// benchReps is HERALD_BENCH_REPS, or 3 when it is not set; BenchmarkRelay
// refuses a value that is not a positive number (checkBenchReps) before
// anything runs.
func benchReps() int { return benchRepsSet }

var benchRepsSet, benchRepsErr = parseBenchReps(os.Getenv("HERALD_BENCH_REPS"))

func parseBenchReps(v string) (int, error) {
	if v == "" {
		return 3, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("HERALD_BENCH_REPS=%q: want a positive number of repetitions", v)
	}
	return n, nil
}

// checkBenchReps stops a benchmark whose HERALD_BENCH_REPS is malformed.
func checkBenchReps(b *testing.B) {
	if benchRepsErr != nil {
		b.Fatal(benchRepsErr)
	}
}

// benchDrains drains a fresh 100,000-event backlog on server with each
// variant, in interleaved repetitions, and prints medians. On PostgreSQL
// the first one-relay drain is followed by the table's bloat.
func benchDrains(b *testing.B, server testenv.Server) {
	variants := []drainVariant{
		{name: "bare loop", run: drainBare},
		{name: "herald-1", run: func(b *testing.B, d *testenv.Database, brokers []string, topic string) string {
			return drainHerald(b, d, brokers, topic, 1)
		}},
		{name: "herald-2", run: func(b *testing.B, d *testenv.Database, brokers []string, topic string) string {
			return drainHerald(b, d, brokers, topic, 2)
		}},
		{name: "herald-3", run: func(b *testing.B, d *testenv.Database, brokers []string, topic string) string {
			return drainHerald(b, d, brokers, topic, 3)
		}},
	}
	if server == testenv.PostgreSQL {
		// The WAL source drains a backlog committed after its checkpoint:
		// the slot holds it, the relay resumes at the checkpoint.
		variants = append(variants, drainVariant{name: "wal-1", prepare: prepareStream, run: drainStream})
	}
	samples := map[string][]drainSample{}
	brokers := testenv.KafkaBrokers(b)
	events := float64(*benchEvents)
	for rep := 1; rep <= benchReps(); rep++ {
		for _, v := range variants {
			d := testenv.NewHeraldDatabaseOn(b, server)
			topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
			if v.prepare != nil {
				v.prepare(b, d, brokers, topic)
			}
			bulkLoad(b, d, 0, *benchEvents, benchAggregates)
			log0, cpu0, self0 := logBytes(d), serverCPU(server), processCPU()
			start := time.Now()
			detail := v.run(b, d, brokers, topic)
			elapsed := time.Since(start)
			log1, cpu1, self1 := logBytes(d), serverCPU(server), processCPU()
			s := drainSample{rate: events / elapsed.Seconds(), log: -1, dbCPU: -1,
				processMS: float64((self1 - self0).Milliseconds()) / (events / 1000)}
			if log0 >= 0 && log1 >= 0 {
				s.log = float64(log1-log0) / events
			}
			if cpu0 >= 0 && cpu1 >= 0 {
				s.dbCPU = (cpu1 - cpu0).Seconds() * 100_000 / events
			}
			samples[v.name] = append(samples[v.name], s)
			fmt.Printf("%s rep %d %-10s %7.0f events/s (%v), %s %5.0f B/event, %s CPU %5.1f s/100k, process CPU %4.1f ms/1k; %s\n",
				server, rep, v.name, s.rate, elapsed.Round(time.Millisecond), logName(server), s.log, server, s.dbCPU, s.processMS, detail)
			if server == testenv.PostgreSQL && rep == 1 && v.name == "herald-1" {
				reportBloat(b, d)
			}
			if server == testenv.MariaDB {
				purgeBinlogs(b)
			}
		}
	}
	bare := median(samples["bare loop"], func(s drainSample) float64 { return s.rate })
	one := median(samples["herald-1"], func(s drainSample) float64 { return s.rate })
	fmt.Printf("\n| %s: drain of %d × 1 KiB, %d aggregates (medians of %d) | events/s | vs bare loop | vs 1 relay | %s B/event | %s CPU s / 100k | process CPU ms / 1k |\n",
		server, *benchEvents, benchAggregates, benchReps(), logName(server), server)
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, v := range variants {
		ss := samples[v.name]
		rate := median(ss, func(s drainSample) float64 { return s.rate })
		fmt.Printf("| %s | %.0f | %.2f× | %.2f× | %.0f | %.1f | %.1f |\n", v.name, rate, rate/bare, rate/one,
			median(ss, func(s drainSample) float64 { return s.log }),
			median(ss, func(s drainSample) float64 { return s.dbCPU }),
			median(ss, func(s drainSample) float64 { return s.processMS }))
		b.ReportMetric(rate, strings.ReplaceAll(v.name, " ", "-")+"-events/s")
	}
}

func median[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

// drainHerald drains with n in-process relays (defaults but the logger and
// observer), each with its own producer and connection pool as separate
// processes would have.
func drainHerald(b *testing.B, d *testenv.Database, brokers []string, topic string, n int) string {
	stats := &claimStats{}
	stop := runRelays(b, d, brokers, topic, n, stats)
	waitDrained(b, d.DB)
	stop()
	return stats.String()
}

// prepareStream runs a stream relay on the empty outbox until it
// checkpointed, and stops it: the stream has a position, the backlog
// loaded next lies after it.
func prepareStream(b *testing.B, d *testenv.Database, brokers []string, topic string) {
	stop := runRelaysWith(b, d, brokers, topic, 1, &claimStats{}, benchRelay{stream: true})
	testenv.Eventually(b, time.Minute, "the stream's first checkpoint", func() bool {
		var pos sql.NullString
		d.DB.QueryRow("SELECT position FROM outbox_stream WHERE id = 1").Scan(&pos)
		return pos.String != ""
	})
	stop()
}

// drainStream runs a stream relay until every event is on the topic: the
// stream publishes without marks, and the published rule (the watermark)
// lags the topic by its sampling interval, which would count in a drain of
// seconds.
func drainStream(b *testing.B, d *testenv.Database, brokers []string, topic string) string {
	stats := &claimStats{}
	stop := runRelaysWith(b, d, brokers, topic, 1, stats, benchRelay{stream: true})
	adm := testenv.NewAdmin(b, brokers)
	testenv.Eventually(b, 15*time.Minute, "every event on the topic", func() bool {
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err != nil {
			return false
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n >= int64(*benchEvents)
	})
	stop()
	return stats.String()
}

// bareClaim is the bare loop's claim on each server: the ready rows in
// idx_ready's order, locked, skipping those another transaction holds.
var bareClaim = map[testenv.Server]string{
	testenv.MariaDB: `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, occurred_at
		FROM outbox_events FORCE INDEX (idx_ready) WHERE published_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(6)
		ORDER BY next_attempt_at, occurred_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
	testenv.PostgreSQL: `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, occurred_at
		FROM outbox_events WHERE published_at IS NULL AND next_attempt_at <= statement_timestamp()
		ORDER BY published_at, next_attempt_at, occurred_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
}

// drainBare is the limit row: one loop that claims 500 ready rows with
// SELECT ... FOR UPDATE SKIP LOCKED in a short transaction, then marks them
// published with one UPDATE; no order check, no Kafka.
func drainBare(b *testing.B, d *testenv.Database, _ []string, _ string) string {
	ctx := context.Background()
	db, _, err := database.Open(ctx, d.DSN, database.ConnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	claims := 0
	for {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			b.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, bareClaim[d.Server])
		if err != nil {
			b.Fatal(err)
		}
		var ids []any
		for rows.Next() {
			var id, typ, agg, et string
			var seq uint64
			var v int
			var payload []byte
			var headers []byte
			var at time.Time
			if err := rows.Scan(&id, &typ, &agg, &seq, &et, &v, &payload, &headers, &at); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if len(ids) == 0 {
			return fmt.Sprintf("%d claims", claims)
		}
		claims++
		if _, err := db.ExecContext(ctx, d.SQL(`UPDATE outbox_events SET published_at = CURRENT_TIMESTAMP(6)
			WHERE id IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ")+`) AND published_at IS NULL`), ids...); err != nil {
			b.Fatal(err)
		}
	}
}

// logName names server's log, whose bytes logBytes counts.
func logName(server testenv.Server) string {
	if server == testenv.PostgreSQL {
		return "WAL"
	}
	return "binlog"
}

// serverCPU is the stack's database server's CPU time so far (user +
// system), or -1 when it cannot be read (the stack's pid file, /proc).
func serverCPU(server testenv.Server) time.Duration {
	read := localstack.MariaDBCPU
	if server == testenv.PostgreSQL {
		read = localstack.PostgresCPU
	}
	return cpuOrUnknown(read())
}

// kafkaCPU is the stack's Kafka nodes' CPU time so far, or -1.
func kafkaCPU() time.Duration { return cpuOrUnknown(localstack.KafkaCPU()) }

// processCPU is this process's CPU time so far, or -1.
func processCPU() time.Duration { return cpuOrUnknown(localstack.ProcessCPU("self")) }

func cpuOrUnknown(cpu time.Duration, err error) time.Duration {
	if err != nil {
		return -1
	}
	return cpu
}

// deliveryVariant is one relay setting benchDelivery compares.
type deliveryVariant struct {
	name string
	opts benchRelay
}

// deliveryVariants are the relays benchDelivery compares on server: the
// polling relay and server's change stream (binlog, wal).
func deliveryVariants(server testenv.Server) []deliveryVariant {
	return []deliveryVariant{
		{"poll, defaults", benchRelay{}},
		{"poll, --poll-interval 10ms", benchRelay{pollInterval: 10 * time.Millisecond}},
		{streamName(server) + ", defaults", benchRelay{stream: true}},
	}
}

// streamName is server's change-stream source.
func streamName(server testenv.Server) string {
	if server == testenv.PostgreSQL {
		return "wal"
	}
	return "binlog"
}

// benchDelivery measures the delay from an event's commit to its append on
// the topic for each of deliveryVariants, in interleaved repetitions.
func benchDelivery(b *testing.B, server testenv.Server) {
	type sample struct{ p50, p99, max time.Duration }
	samples := map[string][]sample{}
	for rep := 1; rep <= benchReps(); rep++ {
		for _, v := range deliveryVariants(server) {
			p50, p99, maxDelay := deliveryOnce(b, server, v.opts)
			samples[v.name] = append(samples[v.name], sample{p50, p99, maxDelay})
			fmt.Printf("%s rep %d delivery %-28s p50 %v, p99 %v, max %v\n", server, rep, v.name, p50, p99, maxDelay)
		}
	}
	fmt.Printf("\n| %s: delivery at 1,000 events/s, commit → append (medians of %d) | p50 | p99 | max |\n| --- | ---: | ---: | ---: |\n", server, benchReps())
	for _, v := range deliveryVariants(server) {
		ss := samples[v.name]
		ms := func(f func(sample) time.Duration) float64 {
			return median(ss, func(s sample) float64 { return float64(f(s).Microseconds()) / 1000 })
		}
		fmt.Printf("| %s | %.1f ms | %.1f ms | %.1f ms |\n", v.name, ms(func(s sample) time.Duration { return s.p50 }),
			ms(func(s sample) time.Duration { return s.p99 }), ms(func(s sample) time.Duration { return s.max }))
	}
}

// deliveryOnce measures the delay from an event's commit to its append on
// the topic (the broker's LogAppendTime) with one relay, while a writer
// commits events at a steady 1,000 per second (10 per transaction, every
// 10 ms) for 30 s.
func deliveryOnce(b *testing.B, server testenv.Server, opts benchRelay) (p50, p99, maxDelay time.Duration) {
	const (
		rate     = 1000
		perTx    = 10
		duration = 30 * time.Second
	)
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, server)
	appendTime := "LogAppendTime"
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12,
		Configs: map[string]*string{"message.timestamp.type": &appendTime}})
	stop := runRelaysWith(b, d, brokers, topic, 1, &claimStats{}, opts)
	defer stop()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer consumer.Close()
	// Each event's commit time and first append time, by id. The consumer
	// can see a record before the writer has noted its commit (the
	// writer's goroutine may lose the CPU in between), so the delays are
	// computed once both are known.
	var (
		mu        sync.Mutex
		committed = map[string]time.Time{}
		appended  = map[string]time.Time{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for ctx.Err() == nil {
			fetches := consumer.PollFetches(ctx)
			fetches.EachRecord(func(r *kgo.Record) {
				var id string
				for _, h := range r.Headers {
					if h.Key == envelope.HeaderEventID {
						id = string(h.Value)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if _, dup := appended[id]; !dup {
					appended[id] = r.Timestamp
				}
			})
		}
	}()

	w, err := outbox.NewWriter(outbox.Config{Dialect: d.Dialect})
	if err != nil {
		b.Fatal(err)
	}
	// Warm up: one event through the new topic before the clock runs.
	// Without it about one run in three had its first seconds' events
	// appended together 5 s after the topic's creation (likely a first
	// produce meeting a partition not loaded yet, and franz-go refreshing
	// metadata at most every 5 s): the topic's birth, not the relay's
	// delivery.
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	warm, err := w.Add(ctx, tx, event("warm-up", 0))
	if err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(b, time.Minute, "the warm-up event on the topic", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := appended[warm[0]]
		return ok
	})
	tick := time.NewTicker(time.Second * perTx / rate)
	defer tick.Stop()
	deadline := time.Now().Add(duration)
	written := 0
	for n := 0; time.Now().Before(deadline); n++ {
		<-tick.C
		var events []outbox.Event
		for i := range perTx {
			events = append(events, event(aggName((n*perTx+i)%benchAggregates), n*perTx+i))
		}
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		ids, err := w.Add(ctx, tx, events...)
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		mu.Lock()
		for _, id := range ids {
			committed[id] = now
		}
		mu.Unlock()
		written += len(ids)
	}
	var delays []time.Duration
	testenv.WaitFor(b, time.Minute, "every event consumed", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		delays = delays[:0]
		for id, at := range committed {
			if app, ok := appended[id]; ok {
				delays = append(delays, app.Sub(at))
			}
		}
		return len(delays) == written, fmt.Sprintf("%d of %d consumed; %d unpublished in the database",
			len(delays), written, unpublished(b, d.DB))
	})
	cancel()
	<-consumed
	slices.Sort(delays)
	p := func(q float64) time.Duration {
		return delays[int(q*float64(len(delays)-1))].Round(100 * time.Microsecond)
	}
	return p(0.5), p(0.99), delays[len(delays)-1].Round(100 * time.Microsecond)
}

// benchIdle measures what one idle relay costs the database: statements
// per second (MariaDB; transactions per second on PostgreSQL, where each of
// the relay's statements outside a settle is one) and the server's CPU with
// nothing to publish, over 20 s.
func benchIdle(b *testing.B, server testenv.Server) {
	const duration = 20 * time.Second
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, server)
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 3})
	questions := func() int64 {
		var n int64
		var err error
		if server == testenv.PostgreSQL {
			// The statistics are a moment behind: a backend reports when it
			// goes idle, at most once a second.
			err = d.DB.QueryRow("SELECT sum(xact_commit + xact_rollback)::bigint FROM pg_stat_database").Scan(&n)
		} else {
			var name string
			err = d.DB.QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n)
		}
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	measure := func() (float64, float64) {
		q0, cpu0 := questions(), serverCPU(server)
		<-time.After(duration)
		q1, cpu1 := questions(), serverCPU(server)
		return float64(q1-q0-1) / duration.Seconds(), float64(cpu1-cpu0) / float64(duration) * 100
	}
	// The server's own background (other sessions' work on this shared
	// machine included) first, then the same with an idle relay.
	baseQ, baseCPU := measure()
	stop := runRelays(b, d, brokers, topic, 1, &claimStats{})
	defer stop()
	<-time.After(2 * time.Second) // past the first turn at the bucket table
	q, cpu := measure()
	fmt.Printf("%s idle relay (poll interval %v): %.0f statements/s and %.2f %% of a core of server CPU more than without it (%.0f/s and %.2f %% without)\n",
		server, relay.PollIntervalDefault, q-baseQ, cpu-baseCPU, baseQ, baseCPU)
	b.ReportMetric(q-baseQ, "statements/s")
}

// TestParseBenchReps: the benchmarks' repetitions default to 3, and a
// value that is not a positive number is refused, not replaced.
func TestParseBenchReps(t *testing.T) {
	for v, want := range map[string]int{"": 3, "1": 1, "5": 5} {
		if n, err := parseBenchReps(v); err != nil || n != want {
			t.Errorf("parseBenchReps(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"two", "0", "-1", "3x"} {
		if _, err := parseBenchReps(v); err == nil {
			t.Errorf("parseBenchReps(%q): no error", v)
		}
	}
}
