package relay_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/reference"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// The relay's throughput and the claim's latency on the local stack, on
// MariaDB and on PostgreSQL in one run (docs/benchmarks.md, "Relay").
// Figures, not assertions; each sub-benchmark does its work once, so run
// it with -benchtime 1x:
//
//	go test -run '^$' -bench BenchmarkRelay -benchtime 1x -timeout 90m ./relay/
//
// BenchmarkRelay/<server>/drain/interleaved drains a backlog of 100,000
// 1 KB events over 1,000 aggregates with a bare claim+mark loop (the limit)
// and with 1, 2 and 3 herald relays (in-process Relay.Run, each with its
// own producer and connection pool, as separate processes would have), in
// interleaved repetitions (HERALD_BENCH_REPS, default 3), and prints
// medians; on PostgreSQL the first one-relay drain then deletes the
// published events (Cleanup) and reports the table's dead tuples and size,
// before and after autovacuum. drain/reference runs the reference loop of
// the specification's source material, in SQL both databases speak.
// sustained has writers commit as fast as they can for
// -relay.bench-sustained (default 1 min) with the writers alone, 1 and 2
// polling relays and a change-stream relay (binlog, wal), in interleaved
// repetitions: the rate each keeps up with and what it costs the database
// per event. delivery measures commit → append at 1,000 events/s with
// the polling relay's defaults, with a 10 ms poll interval and (MariaDB)
// with the binlog relay; idle what an idle relay costs the database.
// BenchmarkRelay/<server>/claim/* times Claim at backlogs of 1,000 and
// 1,000,000 events. Afterwards the benchmark purges the binary logs it made
// (as MariaDB's root over the stack's socket) when it can. A trial run at a
// smaller scale:
//
//	go test -run '^$' -bench BenchmarkRelay -benchtime 1x ./relay/ -args -relay.bench-events=2000 -relay.bench-backlog=20000

var (
	benchEvents       = flag.Int("relay.bench-events", 100_000, "events the drain benchmarks load")
	benchLargeBacklog = flag.Int("relay.bench-backlog", 1_000_000, "the large backlog of the claim benchmark")
)

const (
	benchAggregates  = 1_000
	benchPayloadSize = 1024
	// referenceBudget bounds the reference loop's run: at a few hundred
	// events per second, draining 100,000 would take the better part of
	// ten minutes; its rate is steady long before.
	referenceBudget = 45 * time.Second
)

func BenchmarkRelay(b *testing.B) {
	checkBenchReps(b)
	b.Cleanup(func() { purgeBinlogs(b) })
	for _, server := range testenv.Servers {
		b.Run(string(server), func(b *testing.B) {
			b.Run("drain", func(b *testing.B) {
				b.Run("interleaved", func(b *testing.B) { benchDrains(b, server) })
				b.Run("reference", func(b *testing.B) { benchReference(b, server) })
			})
			b.Run("sustained", func(b *testing.B) { benchSustained(b, server) })
			b.Run("delivery", func(b *testing.B) { benchDelivery(b, server) })
			b.Run("idle", func(b *testing.B) { benchIdle(b, server) })
			b.Run("claim", func(b *testing.B) {
				b.Run("backlog-1000", func(b *testing.B) { benchClaim(b, server, 1_000) })
				b.Run(fmt.Sprintf("backlog-%d", *benchLargeBacklog), func(b *testing.B) { benchClaim(b, server, *benchLargeBacklog) })
			})
		})
	}
}

// benchPayload is a JSON payload of about benchPayloadSize bytes that does
// not compress to nothing (random base64), as real payloads with ids,
// names and amounts do not.
func benchPayload(agg string, i int, rnd *rand.Rand) string {
	raw := make([]byte, (benchPayloadSize-60)*3/4)
	for j := range raw {
		raw[j] = byte(rnd.Uint32())
	}
	return fmt.Sprintf(`{"order_id":%q,"n":%d,"total_amount":"19.99","note":%q}`, agg, i, base64.StdEncoding.EncodeToString(raw))
}

// bulkLoad inserts events first..first+n-1 of a stream with multi-row
// INSERTs of herald's schema: event i belongs to aggregate i % aggregates
// and is its (i / aggregates + 1)-th event; occurred_at and next_attempt_at
// rise with i (and with each call), in the past, so claims take the events
// in stream order.
func bulkLoad(b *testing.B, d *testenv.Database, first, n, aggregates int) {
	b.Helper()
	ctx := context.Background()
	db := d.DB
	rnd := rand.New(rand.NewPCG(uint64(first), uint64(n)))
	now, err := d.Dialect.Now(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	base := now.Add(-time.Hour)
	const rowsPerStmt, stmtsPerTx = 500, 10
	for start, stop := first, first+n; start < stop; {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for s := 0; s < stmtsPerTx && start < stop; s++ {
			end := min(stop, start+rowsPerStmt)
			var q strings.Builder
			q.WriteString(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
				schema_version, payload, occurred_at, next_attempt_at) VALUES `)
			args := make([]any, 0, (end-start)*8)
			for i := start; i < end; i++ {
				if i > start {
					q.WriteString(", ")
				}
				q.WriteString("(?, 'order', ?, ?, 'order.updated', 1, ?, ?, ?)")
				agg := aggName(i % aggregates)
				at := base.Add(time.Duration(i-first) * time.Microsecond)
				args = append(args, uuid.Must(uuid.NewV7()).String(), agg, i/aggregates+1,
					benchPayload(agg, i, rnd), at, at)
			}
			if _, err := tx.ExecContext(ctx, d.SQL(q.String()), args...); err != nil {
				b.Fatalf("bulk load: %v", err)
			}
			start = end
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// The counters the writer would have left, so the data is consistent.
	upsert := "ON DUPLICATE KEY UPDATE last_seq = VALUES(last_seq)"
	if d.Server == testenv.PostgreSQL {
		upsert = "ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_seq = EXCLUDED.last_seq"
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO outbox_aggregates (aggregate_type, aggregate_id, last_seq)
		SELECT aggregate_type, aggregate_id, MAX(aggregate_seq) FROM outbox_events GROUP BY aggregate_type, aggregate_id
		`+upsert); err != nil {
		b.Fatal(err)
	}
}

// logBytes is where the server's log stands, in bytes: the total size of
// MariaDB's binary logs, PostgreSQL's WAL insert position; -1 when it
// cannot be read.
func logBytes(d *testenv.Database) int64 {
	if d.Server == testenv.PostgreSQL {
		var pos int64
		if err := d.DB.QueryRow("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").Scan(&pos); err != nil {
			return -1
		}
		return pos
	}
	return binlogSize(d.DB)
}

// binlogSize is the total size of the server's binary logs, or -1 when
// they cannot be read.
func binlogSize(db *sql.DB) int64 {
	files, err := binlog.ListLogs(context.Background(), db)
	if err != nil {
		return -1
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	return total
}

// purgeBinlogs removes the binary logs before the current one, as root over
// the stack's socket (the herald user may not). Without access it says so:
// `make reset` wipes them, and binlog_expire_logs_seconds bounds them.
func purgeBinlogs(b *testing.B) {
	if err := localstack.MariaDBRoot("PURGE BINARY LOGS BEFORE NOW()"); err != nil {
		fmt.Printf("binlogs NOT purged (%v); `make reset` wipes them\n", err)
		return
	}
	fmt.Println("binlogs purged (PURGE BINARY LOGS BEFORE NOW() as root over the stack's socket)")
}

type drainResult struct {
	events  int
	elapsed time.Duration
	binlog  int64 // log bytes (binlog, WAL), -1 unknown
	server  testenv.Server
}

func (r drainResult) report(b *testing.B, name string) {
	rate := float64(r.events) / r.elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	line := fmt.Sprintf("%-10s %7d events in %8v: %7.0f events/s", name, r.events, r.elapsed.Round(time.Millisecond), rate)
	if r.binlog >= 0 {
		per := float64(r.binlog) / float64(r.events)
		kind := "ROW binlog"
		if r.server == testenv.PostgreSQL {
			kind = "WAL"
		}
		b.ReportMetric(per, "log-B/event")
		line += fmt.Sprintf(", %s %.0f B/event (%.1f MB)", kind, per, float64(r.binlog)/1e6)
	}
	fmt.Println(line)
}

// unpublished counts the events not published yet, by the rule of
// docs/design.md 9.4 (a stream's untouched rows until its watermark passes
// them), with the verifier's own SQL.
func unpublished(b *testing.B, db *sql.DB) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM outbox_events WHERE NOT " + verify.PublishedSQL).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// claimStats counts what the relays' claims did (a relay.Observer).
type claimStats struct {
	mu                          sync.Mutex
	claims, empty, leased, held int
	failed                      int
	claimTime, publishTime      time.Duration
}

func (s *claimStats) Claimed(c store.Claim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if len(c.Events) == 0 {
		s.empty++
	}
	s.leased += len(c.Events)
	s.held += c.Held
	s.claimTime += c.Duration
}

func (s *claimStats) PublishedBatch(d time.Duration, _ int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishTime += d
}

func (s *claimStats) Failed(string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed++
}

func (s *claimStats) Published(string, int32, int) {}
func (s *claimStats) Settled(store.Settled)        {}

func (s *claimStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d claims (%d empty), %d events claimed, %d held, %d failures; "+
		"time in claims %v, in publishing %v (summed over relays)", s.claims, s.empty, s.leased, s.held,
		s.failed, s.claimTime.Round(time.Millisecond), s.publishTime.Round(time.Millisecond))
}

// reportBloat prints outbox_events' dead tuples and size after the drain,
// after a cleanup that deletes every published event, and once autovacuum
// has visited the table (or two minutes passed).
func reportBloat(b *testing.B, d *testenv.Database) {
	ctx := context.Background()
	fmt.Printf("postgres bloat: after the drain: %s\n", tableState(b, d))
	rep, err := d.Store().Cleanup(ctx, store.CleanupRequest{Retention: time.Microsecond, BatchSize: 5000})
	if err != nil {
		b.Fatal(err)
	}
	// A backend sends its statistics when idle for a while or when it
	// exits: close the cleanup's connections, then wait until the figures
	// include the deletes.
	d.DB.SetMaxIdleConns(0)
	testenv.WaitFor(b, time.Minute, "the cleanup in the table's statistics", func() (bool, string) {
		live := liveTuples(b, d)
		return live == 0, fmt.Sprintf("%d live tuples", live)
	})
	fmt.Printf("postgres bloat: after cleanup (%d deleted in %d batches): %s\n", rep.Events, rep.Batches, tableState(b, d))
	// The drain's own dead tuples may have had the table vacuumed
	// already: wait for the next visit to finish.
	cleaned := lastAutovacuum(b, d)
	testenv.Eventually(b, 2*time.Minute, "an autovacuum of outbox_events after the cleanup", func() bool {
		return lastAutovacuum(b, d).After(cleaned)
	})
	fmt.Printf("postgres bloat: autovacuum at %v: %s\n", lastAutovacuum(b, d).Format(time.TimeOnly), tableState(b, d))
}

// tableState is outbox_events' live and dead tuples (the statistics
// collector's, a moment behind) and its heap, index and total sizes.
func tableState(b *testing.B, d *testenv.Database) string {
	var live, dead, heap, index, total int64
	if err := d.DB.QueryRow(`SELECT n_live_tup, n_dead_tup, pg_relation_size(relid), pg_indexes_size(relid),
		pg_total_relation_size(relid) FROM pg_stat_user_tables WHERE relname = 'outbox_events'`).
		Scan(&live, &dead, &heap, &index, &total); err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("%d live, %d dead tuples; heap %.1f MB, indexes %.1f MB, total %.1f MB",
		live, dead, float64(heap)/1e6, float64(index)/1e6, float64(total)/1e6)
}

func liveTuples(b *testing.B, d *testenv.Database) int64 {
	var n int64
	if err := d.DB.QueryRow(`SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'outbox_events'`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func lastAutovacuum(b *testing.B, d *testenv.Database) time.Time {
	var at sql.NullTime
	if err := d.DB.QueryRow(`SELECT last_autovacuum FROM pg_stat_user_tables WHERE relname = 'outbox_events'`).Scan(&at); err != nil {
		b.Fatal(err)
	}
	return at.Time
}

// runRelays starts n in-process relays on d, each with its own connection
// pool and producer as separate processes would have, and returns a
// function that stops them.
func runRelays(b *testing.B, d *testenv.Database, brokers []string, topic string, n int, stats *claimStats) (stop func()) {
	return runRelaysWith(b, d, brokers, topic, n, stats, benchRelay{})
}

// benchRelay is how the benchmark's relays differ from the defaults.
type benchRelay struct {
	// stream streams the database's change stream (--source binlog on
	// MariaDB, wal on PostgreSQL: one leads, the others stand by), with
	// the producer lingering 0 as `herald relay` sets it.
	stream bool
	// pollInterval, when set, replaces the default.
	pollInterval time.Duration
	// linger, when set, replaces the producer's linger (a stream's is 0,
	// herald relay's rule).
	linger time.Duration
}

// runRelaysWith is runRelays with non-default settings.
func runRelaysWith(b *testing.B, d *testenv.Database, brokers []string, topic string, n int, stats *claimStats, opts benchRelay) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var closers []func()
	var relays []*relay.Relay
	for i := range n {
		// As herald relay opens it: a minimal row image where allowed.
		db, dialect, err := database.Open(ctx, d.DSN, database.ConnOptions{MinimalRowImage: true})
		if err != nil {
			b.Fatal(err)
		}
		pc := kafka.ProducerConfig{Brokers: brokers, ClientID: "herald-bench", DeliveryTimeout: relay.LeaseDefault * 2 / 3}
		cfg := relay.Config{ID: fmt.Sprintf("bench-%d", i), Topics: map[string]string{"order": topic},
			Logger: warnLogger(), Observer: stats, PollInterval: opts.pollInterval}
		pc.Linger = opts.linger // 0: the producer's default
		if opts.stream {
			if opts.linger == 0 {
				pc.Linger = -1 // a stream's default: no lingering
			}
			if d.Server == testenv.PostgreSQL {
				cfg.Stream, err = wal.NewSource(ctx, db, wal.Config{URL: d.DSN, Config: changestream.Config{Logger: warnLogger()}})
			} else {
				cfg.Stream, err = binlog.NewSource(ctx, db, binlog.Config{DSN: d.DSN, Config: changestream.Config{Logger: warnLogger()}})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		producer, err := kafka.NewProducer(pc)
		if err != nil {
			b.Fatal(err)
		}
		closers = append(closers, func() { producer.Close(); db.Close() })
		r, err := relay.New(cfg, store.New(db, dialect), producer)
		if err != nil {
			b.Fatal(err)
		}
		relays = append(relays, r)
	}
	var wg sync.WaitGroup
	for _, r := range relays {
		wg.Add(1)
		go func() { defer wg.Done(); r.Run(ctx) }()
	}
	return func() {
		cancel()
		wg.Wait()
		for _, c := range closers {
			c()
		}
	}
}

// waitDrained returns once no event is unpublished.
func waitDrained(b *testing.B, db *sql.DB) {
	b.Helper()
	testenv.Eventually(b, 15*time.Minute, "the backlog drained", func() bool { return unpublished(b, db) == 0 })
}

// benchReference runs the reference loop (package reference) for
// referenceBudget.
func benchReference(b *testing.B, server testenv.Server) {
	brokers := testenv.KafkaBrokers(b)
	d := testenv.NewHeraldDatabaseOn(b, server)
	topic := testenv.NewTopic(b, brokers, testenv.TopicOptions{Partitions: 12})
	bulkLoad(b, d, 0, *benchEvents, benchAggregates)
	ctx := context.Background()
	producer, err := reference.NewProducer(brokers, topic)
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()

	b.ResetTimer()
	binlog0 := logBytes(d)
	start := time.Now()
	published := 0
	for time.Since(start) < referenceBudget {
		n, err := reference.Round(ctx, d.DB, d.Dialect, producer)
		if errors.Is(err, reference.ErrNothingReady) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		published += n
	}
	elapsed := time.Since(start)
	binlog1 := logBytes(d)
	b.StopTimer()
	res := drainResult{events: published, elapsed: elapsed, binlog: -1, server: server}
	if binlog0 >= 0 && binlog1 >= 0 {
		res.binlog = binlog1 - binlog0
	}
	res.report(b, "reference")
	fmt.Printf("           (the first %d events of a %d-event backlog, %v budget)\n", published, *benchEvents, referenceBudget)
}

// benchClaim times Claim (500 events, herald's default batch) over a
// backlog of the given size. Each claimed batch is then marked
// published and, for the small backlog, replaced by as many new events, so
// every measured claim sees the same backlog; neither is timed.
func benchClaim(b *testing.B, server testenv.Server, backlog int) {
	const (
		warmup     = 5
		samples    = 50
		refSamples = 3
		limit      = relay.BatchSizeDefault
	)
	d := testenv.NewHeraldDatabaseOn(b, server)
	loadStart := time.Now()
	bulkLoad(b, d, 0, backlog, benchAggregates)
	fmt.Printf("%s claim/backlog-%d: loaded in %v\n", server, backlog, time.Since(loadStart).Round(time.Second))
	analyze := "ANALYZE TABLE outbox_events"
	if server == testenv.PostgreSQL {
		analyze = "ANALYZE outbox_events"
	}
	if _, err := d.DB.Exec(analyze); err != nil {
		b.Fatal(err)
	}
	st := d.Store()
	ctx := context.Background()
	loaded := backlog
	rb, err := st.Rebalance(ctx, store.RebalanceRequest{RelayID: "bench", Lease: time.Hour})
	if err != nil {
		b.Fatal(err)
	}

	var times []time.Duration
	var refTimes []time.Duration
	b.ResetTimer()
	for i := range warmup + samples {
		// The reference query on the same backlog, for contrast, a few
		// times (rolled back: it leases nothing; on a large backlog it
		// sorts and locks the whole ready range, which takes a while).
		if i >= warmup && len(refTimes) < refSamples {
			refTimes = append(refTimes, timeReferenceQuery(b, d.DB))
		}
		t0 := time.Now()
		c, err := st.Claim(ctx, store.ClaimRequest{Ownership: rb.Ownership, Limit: limit, Policy: store.OrderHold})
		elapsed := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Events) == 0 {
			b.Fatalf("claim %d leased nothing (held %d)", i, c.Held)
		}
		if i >= warmup {
			times = append(times, elapsed)
		}
		ids := make([]string, len(c.Events))
		for j, e := range c.Events {
			ids[j] = e.ID
		}
		if _, err := st.Settle(ctx, c, store.Outcome{Published: ids}, store.OrderHold); err != nil {
			b.Fatal(err)
		}
		if backlog < 100_000 {
			bulkLoad(b, d, loaded, len(c.Events), benchAggregates)
			loaded += len(c.Events)
		}
	}
	b.StopTimer()
	p50, p95 := percentile(times, 50), percentile(times, 95)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
	fmt.Printf("%s claim/backlog-%d: Claim(%d) p50 %v, p95 %v, max %v over %d claims; reference query (LIMIT 100) median %v of %d\n",
		server, backlog, limit, p50, p95, slices.Max(times), len(times), percentile(refTimes, 50), len(refTimes))
}

// timeReferenceQuery runs the reference claim query in a transaction it
// rolls back, and says how long the query took.
func timeReferenceQuery(b *testing.B, db *sql.DB) time.Duration {
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	rows, err := tx.QueryContext(ctx, reference.ClaimQuery)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
	return time.Since(start)
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
