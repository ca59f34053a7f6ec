package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// One transaction of many events (a backfill, a bulk import), relayed by
// each of herald's sources (docs/design.md, section 9.7): the relay's peak
// resident set and its rate from the commit to the last event on the
// topic. The events are inserted by one INSERT ... SELECT (from MariaDB's
// sequence engine, or PostgreSQL's generate_series), in one transaction,
// through herald's trigger, each with a 1 KiB payload that does not
// compress much (hex of random bytes, or of SHA-512 digests of random
// values), over 1,000 aggregates; an independent consumer reads the topic
// and checks every event arrived, in order per aggregate. The sources are
// binlog and poll on MariaDB, wal and poll-postgres on PostgreSQL.
//
// `bench bigtx` prints the table and writes docs/benchmarks/bigtx.md.

// BigTxConfig shapes one run of `bench bigtx`.
type BigTxConfig struct {
	// Events is the transaction's size. Defaults to 1,000,000.
	Events int
	// Aggregates is how many aggregates the events spread over. Defaults
	// to 1,000.
	Aggregates int
	// Sources are the relay sources to measure, in turn: binlog and poll
	// (MariaDB), wal and poll-postgres (PostgreSQL). Defaults to all four.
	Sources []string
	// Budget bounds one source's publishing after the commit. Defaults to
	// 10 minutes.
	Budget time.Duration
	// Brokers, MySQLAddr, Out and Herald are as in Config.
	Brokers   []string
	MySQLAddr string
	Out       string
	Herald    string
}

func (c BigTxConfig) withDefaults() BigTxConfig {
	if c.Events == 0 {
		c.Events = 1_000_000
	}
	if c.Aggregates == 0 {
		c.Aggregates = 1_000
	}
	if len(c.Sources) == 0 {
		c.Sources = []string{"binlog", "poll", "wal", "poll-postgres"}
	}
	if c.Budget == 0 {
		c.Budget = 10 * time.Minute
	}
	run := Config{Brokers: c.Brokers, MySQLAddr: c.MySQLAddr, Out: c.Out}.withDefaults()
	c.Brokers, c.MySQLAddr, c.Out = run.Brokers, run.MySQLAddr, run.Out
	return c
}

func (c BigTxConfig) validate() error {
	var errs []error
	if c.Events < 0 {
		errs = append(errs, &ConfigError{"events", "must be positive"})
	}
	if c.Aggregates < 0 {
		errs = append(errs, &ConfigError{"aggregates", "must be positive"})
	}
	for _, s := range c.Sources {
		if _, ok := bigTxSources[s]; !ok {
			errs = append(errs, &ConfigError{"sources", fmt.Sprintf("%q is not a source (binlog, poll, wal, poll-postgres)", s)})
		}
	}
	return errors.Join(errs...)
}

// bigTxSources maps each source bigtx measures to its server and
// herald relay's --source.
var bigTxSources = map[string]struct {
	postgres bool
	source   string
}{
	"binlog": {false, "binlog"}, "poll": {false, "poll"}, "wal": {true, "wal"}, "poll-postgres": {true, "poll"},
}

// bigTxEnv names the BENCH_* variable of each of bigtx's flags.
var bigTxEnv = map[string]string{
	"events": "BENCH_BIGTX_EVENTS", "aggregates": "BENCH_BIGTX_AGGREGATES", "sources": "BENCH_BIGTX_SOURCES",
	"budget": "BENCH_BIGTX_BUDGET",
}

// bigTxResult is one source's run.
type bigTxResult struct {
	Source string
	// Insert and Commit are how long the writer's statement and its
	// COMMIT took; Publish from the commit to the last event on the topic.
	Insert, Commit, Publish time.Duration
	// PeakRSS is the relay's VmHWM at the end, IdleRSS before the
	// transaction.
	PeakRSS, IdleRSS int64
	Verify           Verification
	Err              string
}

func (r bigTxResult) rate(events int) float64 {
	if r.Publish <= 0 {
		return 0
	}
	return float64(events) / r.Publish.Seconds()
}

func bigTxCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bigtx", flag.ContinueOnError)
	var cfg BigTxConfig
	var sources, brokers string
	fs.IntVar(&cfg.Events, "events", 0, "events in the one transaction (default 1,000,000)")
	fs.IntVar(&cfg.Aggregates, "aggregates", 0, "aggregates the events spread over (default 1,000)")
	fs.StringVar(&sources, "sources", "", "relay sources to measure, comma-separated (default binlog,poll,wal,poll-postgres)")
	fs.DurationVar(&cfg.Budget, "budget", 0, "the most one source may take to publish (default 10m)")
	fs.StringVar(&brokers, "brokers", "", "Kafka seed brokers (default 127.0.0.1:9092)")
	fs.StringVar(&cfg.MySQLAddr, "mysql-addr", "", "MariaDB's address (default 127.0.0.1:3306)")
	fs.StringVar(&cfg.Out, "out", "", "directory of bigtx.md (default ../docs/benchmarks)")
	fs.StringVar(&cfg.Herald, "herald", "", "herald binary (default: built from ../cmd/herald)")
	if err := applyEnv(fs, bigTxEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if sources != "" {
		cfg.Sources = strings.Split(sources, ",")
	}
	if brokers != "" {
		cfg.Brokers = strings.Split(brokers, ",")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	start := time.Now()
	results, err := runBigTx(ctx, cfg)
	if err != nil {
		return err
	}
	table := bigTxTable(cfg, results, time.Since(start))
	fmt.Print(table)
	return os.WriteFile(filepath.Join(cfg.Out, "bigtx.md"), []byte(table), 0o644)
}

// runBigTx measures each source in turn on a database and topic of its own,
// removing them after.
func runBigTx(ctx context.Context, cfg BigTxConfig) ([]bigTxResult, error) {
	workDir, err := os.MkdirTemp("", "herald-bigtx-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(workDir)
	if cfg.Herald == "" {
		cfg.Herald = filepath.Join(workDir, "herald")
		build := exec.CommandContext(ctx, "go", "build", "-o", cfg.Herald, "./cmd/herald")
		build.Dir = ".."
		if b, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build herald: %v: %s", err, b)
		}
	}
	st, err := openStack(ctx, Config{Brokers: cfg.Brokers, MySQLAddr: cfg.MySQLAddr}.withDefaults())
	if err != nil {
		return nil, err
	}
	defer st.close()
	defer killAll()
	defer func() {
		killAll()
		for _, f := range st.cleanup() {
			fmt.Println("cleanup:", f)
		}
		if err := purgeBinlogs(); err != nil {
			fmt.Println("cleanup: purge binlogs:", err)
		}
	}()
	var results []bigTxResult
	for _, source := range cfg.Sources {
		fmt.Printf("bigtx %s: %d events in one transaction\n", source, cfg.Events)
		r := bigTxOnce(ctx, cfg, st, workDir, source)
		if r.Err != "" {
			fmt.Printf("bigtx %s: %s\n", source, r.Err)
		} else {
			fmt.Printf("bigtx %s: insert %v, commit %v, published in %v (%.0f events/s), relay peak RSS %d MiB (idle %d MiB); %s\n",
				source, r.Insert.Round(time.Millisecond), r.Commit.Round(time.Millisecond), r.Publish.Round(time.Millisecond),
				r.rate(cfg.Events), r.PeakRSS>>20, r.IdleRSS>>20, verifyNote(r.Verify))
		}
		results = append(results, r)
		if err := purgeBinlogs(); err != nil {
			fmt.Println("purge binlogs:", err)
		}
	}
	return results, nil
}

// bigTxOnce runs one source: a relay on a fresh outbox, one transaction of
// cfg.Events events, the wait until the topic has them all.
func bigTxOnce(ctx context.Context, cfg BigTxConfig, st *stack, workDir, source string) (r bigTxResult) {
	r.Source = source
	fail := func(err error) bigTxResult { r.Err = err.Error(); return r }
	src := bigTxSources[source]
	newDatabase, dropDatabase, dsn := st.newDatabase, st.dropDatabase, st.cfg.dsn
	if src.postgres {
		newDatabase, dropDatabase, dsn = st.newPostgresDatabase, st.dropPostgresDatabase, postgresDSN
	}
	name, db, err := newDatabase(ctx, true)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	defer dropDatabase(context.WithoutCancel(ctx), name)
	topic, err := st.newTopic(ctx, "bigtx-"+source)
	if err != nil {
		return fail(err)
	}
	defer st.deleteTopic(context.WithoutCancel(ctx), topic)
	col, err := newCollector(cfg.Brokers, topic)
	if err != nil {
		return fail(err)
	}
	defer col.close()

	addr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	relay, err := startProcess("bigtx-"+source+"-herald", workDir, nil, cfg.Herald, "relay",
		"--database-url", dsn(name), "--kafka-brokers", strings.Join(cfg.Brokers, ","),
		"--topic", "order="+topic, "--metrics-addr", addr, "--source", src.source)
	if err != nil {
		return fail(err)
	}
	defer relay.stop(30 * time.Second)
	if err := waitReady(ctx, addr, relay, src.source); err != nil {
		return fail(err)
	}
	if _, r.IdleRSS, err = procUsage(relay.pid()); err != nil {
		return fail(err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	t0 := time.Now()
	// payload() and verify's parser agree on "agg" and "seq" first; the
	// blob is ~1,000 hex digits of random bytes, so the event is ~1 KiB.
	insert := fmt.Sprintf(`INSERT INTO outbox_events
		(id, aggregate_type, aggregate_id, event_type, schema_version, payload)
		SELECT UUID(), 'order', CONCAT('agg-', (seq - 1) %% %[2]d), 'order.created', 1,
		       CONCAT('{"agg":"agg-', (seq - 1) %% %[2]d, '","seq":', (seq - 1) DIV %[2]d + 1,
		              ',"blob":"', HEX(RANDOM_BYTES(500)), '"}')
		FROM seq_1_to_%[1]d`, cfg.Events, cfg.Aggregates)
	if src.postgres {
		// Eight SHA-512 digests of random values: 512 bytes, 1,024 hex
		// digits (PostgreSQL has no random bytes without pgcrypto).
		digests := make([]string, 8)
		for i := range digests {
			digests[i] = fmt.Sprintf("sha512(convert_to(g::text || ':%d:' || random()::text, 'UTF8'))", i)
		}
		insert = fmt.Sprintf(`INSERT INTO outbox_events
			(id, aggregate_type, aggregate_id, event_type, schema_version, payload)
			SELECT gen_random_uuid(), 'order', 'agg-' || ((g - 1) %% %[2]d), 'order.created', 1,
			       ('{"agg":"agg-' || ((g - 1) %% %[2]d) || '","seq":' || ((g - 1) / %[2]d + 1) ||
			        ',"blob":"' || encode(%[3]s, 'hex') || '"}')::json
			FROM generate_series(1, %[1]d) AS g`, cfg.Events, cfg.Aggregates, strings.Join(digests, " || "))
	}
	if _, err := tx.ExecContext(ctx, insert); err != nil {
		return fail(fmt.Errorf("insert: %w", err))
	}
	r.Insert = time.Since(t0)
	t1 := time.Now()
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	r.Commit = time.Since(t1)
	committed := time.Now()
	written := map[string]int64{}
	for a := range cfg.Aggregates {
		written[fmt.Sprintf("agg-%d", a)] = int64(cfg.Events / cfg.Aggregates)
		if a < cfg.Events%cfg.Aggregates {
			written[fmt.Sprintf("agg-%d", a)]++
		}
	}
	last, err := col.waitEvents(ctx, cfg.Events, cfg.Budget, func() error {
		if relay.exited() {
			return fmt.Errorf("the relay exited: %v\n%s", relay.exitError(), relay.tail(20))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	r.Publish = last.Sub(committed)
	if _, r.PeakRSS, err = procUsage(relay.pid()); err != nil {
		return fail(err)
	}
	r.Verify = verify(written, col.snapshot(), true)
	return r
}

// waitReady waits until the relay answers /readyz, and, streaming, until it
// streams (its sweep of the empty outbox is done).
func waitReady(ctx context.Context, addr string, p *process, source string) error {
	deadline := time.Now().Add(time.Minute)
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		if p.exited() {
			return fmt.Errorf("the relay exited: %v\n%s", p.exitError(), p.tail(20))
		}
		ready := false
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
		if ready && (source == "poll" || strings.Contains(p.tail(50), `"msg":"streaming"`)) {
			tick.Stop()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			tick.Stop()
			return fmt.Errorf("the relay was not ready within a minute:\n%s", p.tail(20))
		}
	}
}

// bigTxTable is the report.
func bigTxTable(cfg BigTxConfig, results []bigTxResult, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# One transaction of %d events\n\n", cfg.Events)
	fmt.Fprintf(&b, "`cd bench && go run . bigtx` (in `make bench`), %s, %d CPUs, load average %.1f at the end; took %v.\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), loadAverage()[0], took.Round(time.Second))
	fmt.Fprintf(&b, "One INSERT ... SELECT of %d events of ~1 KiB over %d aggregates, through herald's trigger, in one "+
		"transaction; one `herald relay` with its defaults; an independent consumer checks the topic. "+
		"binlog and poll on MariaDB, wal and poll-postgres on PostgreSQL.\n\n", cfg.Events, cfg.Aggregates)
	b.WriteString("| source | insert | commit | commit to last event | events/s | relay peak RSS | relay idle RSS | topic check |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range results {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | | | | | | | failed: %s |\n", r.Source, strings.ReplaceAll(r.Err, "\n", " "))
			continue
		}
		fmt.Fprintf(&b, "| %s | %.1f s | %.1f s | %.1f s | %.0f | %d MiB | %d MiB | %s |\n", r.Source, r.Insert.Seconds(),
			r.Commit.Seconds(), r.Publish.Seconds(), r.rate(cfg.Events), r.PeakRSS>>20, r.IdleRSS>>20, verifyNote(r.Verify))
	}
	return b.String()
}
