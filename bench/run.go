package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// run measures every configured peer, cfg.Reps times, interleaved (each
// repetition runs each kind of measurement for every peer in turn, so a
// noisy minute of the shared machine hits them alike), then writes the
// JSON and the report. It removes what it created, whatever happens.
func run(ctx context.Context, cfg Config, out io.Writer) (err error) {
	started := time.Now()
	selected := selectPeers(cfg.Peers)
	printPlan(out, cfg, selected)
	res := &Results{Started: started.UTC(), Settings: settingsOf(cfg)}
	res.Machine.CPUs = runtime.NumCPU()
	res.Machine.LoadStart = loadAverage()

	workDir, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return err
	}
	self := cfg.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return err
		}
	}
	h := &harness{cfg: cfg, self: self, workDir: workDir, templates: map[string]string{}}
	h.serverID.Store(int64(time.Now().Unix()%1_000_000)*100 + 5_000_000)
	defer killAll()
	if h.cfg.Herald == "" {
		h.cfg.Herald = filepath.Join(workDir, "herald")
		fmt.Fprintln(out, "building herald from ../cmd/herald")
		build := exec.CommandContext(ctx, "go", "build", "-o", h.cfg.Herald, "./cmd/herald")
		build.Dir = ".."
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build herald: %v: %s", err, b)
		}
	}
	st, err := openStack(ctx, cfg)
	if err != nil {
		return err
	}
	h.st = st
	defer st.close()
	defer func() {
		killAll()
		for _, f := range st.cleanup() {
			fmt.Fprintln(out, "cleanup:", f)
		}
		os.RemoveAll(workDir)
	}()
	versions(ctx, h, res)
	res.Settings.ReplicationFactor = -1

	peerResults := make([]PeerResult, len(selected))
	for i, p := range selected {
		peerResults[i] = PeerResult{Name: p.name, Label: p.label, Description: p.description, Table: p.table}
	}
	for i, p := range selected {
		if p.name == "debezium" {
			if err := buildDebezium(ctx, cfg.Debezium); err != nil {
				peerResults[i].Gap = err.Error()
				fmt.Fprintf(out, "debezium: cannot run: %v\n", err)
			}
		}
	}
	tables := map[string]bool{}
	for i, p := range selected {
		if peerResults[i].Gap == "" {
			tables[p.table] = true
		}
	}
	for _, t := range []string{heraldTable, watermillTable} {
		if !tables[t] {
			continue
		}
		t0 := time.Now()
		if err := h.loadTemplate(ctx, t); err != nil {
			return fmt.Errorf("load the %s backlog: %w", t, err)
		}
		fmt.Fprintf(out, "backlog of %d events for %s loaded in %v\n", cfg.Events, t, time.Since(t0).Round(time.Second))
	}
	baselines := map[string]int{} // table shape -> index in res.Baselines
	for _, t := range []string{heraldTable, watermillTable} {
		if tables[t] {
			baselines[t] = len(res.Baselines)
			res.Baselines = append(res.Baselines, Baseline{Table: t})
		}
	}

	for rep := 1; rep <= cfg.Reps; rep++ {
		for _, kind := range []string{"drain", "sustained", "delivery"} {
			if kind == "sustained" {
				for _, t := range []string{heraldTable, watermillTable} {
					if i, ok := baselines[t]; ok {
						b := &res.Baselines[i]
						s, err := h.sustained(ctx, peer{name: "writers", table: t}, rep)
						if err != nil {
							s.Error = err.Error()
						}
						b.Samples = append(b.Samples, s)
						fmt.Fprintf(out, "[%s] rep %d sustained writers alone (%s): written %.0f/s %s\n", elapsed(started), rep, t, s.WrittenRate, errNote(s.Error))
					}
				}
			}
			for i, p := range selected {
				pr := &peerResults[i]
				if pr.Gap != "" {
					continue
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var line string
				switch kind {
				case "drain":
					s, err := h.drain(ctx, p, rep)
					if err != nil {
						s.Error = err.Error()
					}
					pr.Drain = append(pr.Drain, s)
					line = fmt.Sprintf("%d of %d in %.1f s: %.0f events/s%s; verified: %s", s.Delivered, s.Events, s.Seconds, s.Rate,
						map[bool]string{true: " (partial: budget ran out)"}[s.Partial], verifyNote(s.Verify))
					noteError(&line, s.Error)
				case "sustained":
					s, err := h.sustained(ctx, p, rep)
					if err != nil {
						s.Error = err.Error()
					}
					pr.Sustained = append(pr.Sustained, s)
					line = fmt.Sprintf("written %.0f/s, published %.0f/s, backlog %d; verified: %s", s.WrittenRate, s.PublishedRate, s.Backlog, verifyNote(s.Verify))
					noteError(&line, s.Error)
				case "delivery":
					s, err := h.delivery(ctx, p, rep)
					if err != nil {
						s.Error = err.Error()
					}
					pr.Delivery = append(pr.Delivery, s)
					line = fmt.Sprintf("%d events (%.0f/s), p50 %.1f ms, p99 %.1f ms, max %.1f ms; verified: %s", s.Events, s.WrittenRate, s.P50, s.P99, s.Max, verifyNote(s.Verify))
					noteError(&line, s.Error)
				}
				fmt.Fprintf(out, "[%s] rep %d %-9s %-20s %s\n", elapsed(started), rep, kind, p.name, line)
				if err := purgeBinlogs(); err != nil && rep == 1 {
					fmt.Fprintln(out, "note:", err)
				}
			}
		}
	}
	res.Peers = peerResults
	if n := writerRetries.Load(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Writers restarted %d transaction(s) that MariaDB chose as deadlock victims (or whose lock wait timed out), as an application would "+
			"(counted over the whole run; the reference loop's claim, for one, locks the whole ready range at REPEATABLE READ).", n))
	}
	res.Settings.ReplicationFactor = st.rf
	res.Machine.LoadEnd = loadAverage()
	res.Finished = time.Now().UTC()
	res.ElapsedSeconds = time.Since(started).Seconds()
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	if err := writeResults(filepath.Join(cfg.Out, "peers.json"), res); err != nil {
		return err
	}
	if err := writeReport(cfg.Out, res); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s/peers.json, peers.md and the charts; elapsed %v\n", cfg.Out, time.Since(started).Round(time.Second))
	return nil
}

func elapsed(since time.Time) string { return time.Since(since).Round(time.Second).String() }

func errNote(e string) string {
	if e == "" {
		return ""
	}
	return "ERROR: " + firstLine(e)
}

func noteError(line *string, e string) {
	if e != "" {
		*line += "; ERROR: " + firstLine(e)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func verifyNote(v Verification) string {
	if v.FirstProblem == "" && !v.OK {
		return "not run"
	}
	if v.OK {
		return fmt.Sprintf("ok (%d delivered, %d duplicates)", v.Delivered, v.Duplicates)
	}
	return "FAILED: " + v.FirstProblem
}

func selectPeers(names []string) []peer {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []peer
	for _, p := range peers {
		if want[p.name] {
			out = append(out, p)
		}
	}
	return out
}

func settingsOf(cfg Config) Settings {
	return Settings{Reps: cfg.Reps, Events: cfg.Events, Aggregates: cfg.Aggregates, PayloadBytes: cfg.PayloadBytes,
		Partitions: cfg.Partitions, DrainBudgetSeconds: cfg.DrainBudget.Seconds(), ReferenceBudgetSeconds: cfg.ReferenceBudget.Seconds(),
		SustainedSeconds: cfg.Sustained.Seconds(), SustainedWriters: cfg.SustainedWriters, EventsPerTx: cfg.EventsPerTx,
		DeliveryRate: cfg.DeliveryRate, DeliveryWriters: deliveryWriters, DeliverySeconds: cfg.Delivery.Seconds(),
		Order: "per repetition: every peer's drain, then the writers alone and every peer's sustained run, then every peer's delivery run"}
}

// estimate is the plan's guess of a run's length, in seconds, from what
// trial runs on the 2-core development machine took: loading the
// templates, then per repetition and peer a drain (copying the backlog,
// the drain at the peer's expected rate within its budget, its starts), a
// sustained and a delivery run (each a start, the window, the set-up, and
// for a delivery the wait for the events on their way: the whole catch-up
// wait for a peer slower than the rate), and the writers-alone windows.
func estimate(cfg Config, ps []peer) float64 {
	const setup = 2.0 // database, migrations, topic, reader; teardown
	load := float64(cfg.Events) / 6000
	copyTime := float64(cfg.Events) / 15000
	perRep := 2 * (cfg.Sustained.Seconds() + setup)
	for _, p := range ps {
		drain := min(float64(cfg.Events)/p.expectedRate, p.budget(cfg).Seconds())
		starts := 1.0
		if p.resumes {
			starts = 2
		}
		perRep += copyTime + drain + starts*(p.startup+setup)
		perRep += cfg.Sustained.Seconds() + p.startup + setup
		catchUp := 3.0
		if p.expectedRate < 2*float64(cfg.DeliveryRate) {
			catchUp = catchUpWait.Seconds()
		}
		perRep += cfg.Delivery.Seconds() + p.startup + setup + catchUp
	}
	return 2*load + float64(cfg.Reps)*perRep
}

func printPlan(out io.Writer, cfg Config, ps []peer) {
	fmt.Fprintf(out, "herald bench: %d repetitions, interleaved; peers: %s\n", cfg.Reps, strings.Join(cfg.Peers, ", "))
	fmt.Fprintf(out, "  per repetition: drain of %d × %d B events over %d aggregates (budget %v, reference %v) per peer;\n",
		cfg.Events, cfg.PayloadBytes, cfg.Aggregates, cfg.DrainBudget, cfg.ReferenceBudget)
	fmt.Fprintf(out, "  writers alone, then per peer %d writers at full speed for %v; per peer a steady %d events/s for %v\n",
		cfg.SustainedWriters, cfg.Sustained, cfg.DeliveryRate, cfg.Delivery)
	fmt.Fprintf(out, "  estimated duration: %v (a guess from expected rates)\n", (time.Duration(estimate(cfg, ps)) * time.Second).Round(time.Minute/6))
}

// loadTemplate loads a table shape's backlog once into a database of its
// own; drains copy it.
func (h *harness) loadTemplate(ctx context.Context, table string) error {
	name, db, err := h.st.newDatabase(ctx, table == heraldTable)
	if err != nil {
		return err
	}
	defer db.Close()
	h.templates[table] = name
	if table == heraldTable {
		return loadHeraldTemplate(ctx, db, h.cfg.Events, h.cfg.Aggregates, h.cfg.PayloadBytes)
	}
	if err := createWatermillTables(ctx, db); err != nil {
		return err
	}
	return loadWatermillTemplate(ctx, h.cfg.dsn(name), h.cfg.Events, h.cfg.Aggregates, h.cfg.PayloadBytes)
}

// buildDebezium runs the Debezium side's build.sh (idempotent), so a
// failure is the peer's gap with its exact output.
func buildDebezium(ctx context.Context, dir string) error {
	build := filepath.Join(dir, "build.sh")
	if _, err := os.Stat(build); err != nil {
		return fmt.Errorf("no Debezium build: %w", err)
	}
	steps := []string{build}
	// grant.sh gives the herald user RELOAD, which the connector's schema
	// snapshot needs (as root over the stack's socket).
	if grant := filepath.Join(dir, "grant.sh"); fileExists(grant) {
		steps = append(steps, grant)
	}
	for _, step := range steps {
		b, err := exec.CommandContext(ctx, "bash", step).CombinedOutput()
		if err != nil {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			return fmt.Errorf("%s failed (%v): %s", step, err, strings.Join(lines[max(0, len(lines)-10):], "\n"))
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := range min(3, len(f)) {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// versions records what each server and tool says it is.
func versions(ctx context.Context, h *harness, r *Results) {
	m := &r.Machine
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if err := h.st.admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&m.MariaDB); err != nil {
		m.MariaDB = "unknown: " + err.Error()
	}
	m.Kafka = "unknown"
	if b, err := os.ReadFile("../stack/kafka/pom.xml"); err == nil {
		if v := regexp.MustCompile(`<kafka.version>([^<]+)<`).FindSubmatch(b); v != nil {
			m.Kafka = string(v[1]) + " (stack/kafka/pom.xml)"
		}
	}
	m.Brokers = h.st.brokers
	m.Go = runtime.Version()
	m.Java = "not found"
	if b, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		m.Java = firstLine(strings.TrimSpace(string(b)))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var ws []string
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "github.com/ThreeDotsLabs/watermill") {
				ws = append(ws, strings.TrimPrefix(d.Path, "github.com/ThreeDotsLabs/")+" "+d.Version)
			}
		}
		m.Watermill = strings.Join(ws, ", ")
	}
	m.Debezium = debeziumVersion(h.cfg.Debezium)
	if b, err := exec.Command(h.cfg.Herald, "version").CombinedOutput(); err == nil {
		m.Herald = firstLine(strings.TrimSpace(string(b)))
	}
}

// debeziumVersion is the version the Debezium side's build pins (its
// pom.xml's debezium.version property), or "unknown".
func debeziumVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "pom.xml"))
	if err != nil {
		return "unknown"
	}
	if v := regexp.MustCompile(`<debezium.version>([^<]+)<`).FindSubmatch(b); v != nil {
		return string(v[1]) + " (MariaDB connector, Outbox Event Router, Kafka Connect standalone)"
	}
	return "unknown"
}
