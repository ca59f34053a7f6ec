package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
)

// Defaults of DemoConfig's fields.
const (
	// DemoDurationDefault is DemoConfig.Duration's default.
	DemoDurationDefault = time.Minute
	// DemoRateDefault is DemoConfig.Rate's default.
	DemoRateDefault = 10
	// DemoDBPrefixDefault is DemoConfig.DBPrefix's default.
	DemoDBPrefixDefault = "herald_demo_"
)

// DemoConfig shapes `herald demo`: the drills' pipeline with a steady load
// and no fault. BinDir, DatabaseURL, Brokers and RunDir are required.
type DemoConfig struct {
	BinDir      string
	DatabaseURL string
	Brokers     []string
	RunDir      string
	// Kafka and DatabaseOptions are the connection settings, as in
	// Config. Default to plaintext and none.
	Kafka           kafka.Security
	DatabaseOptions database.ConnOptions
	// DBPrefix names the databases PREFIXorders, PREFIXinventory and
	// PREFIXwarehouse, recreated at every run and left afterwards for
	// `herald status`. Defaults to "herald_demo_".
	DBPrefix string
	// Duration is how long orders are sent. Defaults to 1 min.
	Duration time.Duration
	// Rate is orders per second. Defaults to 10.
	Rate float64
	// Live refreshes one status line in place (for a terminal); otherwise
	// a status line is printed every 5 s. Defaults to false.
	Live bool
	// Out receives the status line and the summary. Defaults to io.Discard.
	Out io.Writer
}

// DemoResult is the demo's outcome.
type DemoResult struct {
	Verification *Verification
	Absorbed     int64
	// MetricsURLs served while the demo ran, by service.
	MetricsURLs map[string]string
}

// RunDemo runs the demo until Duration has passed (or ctx ends), drains,
// verifies, prints a summary and stops every process. It returns an error
// if the pipeline did not drain or verification found a problem.
func RunDemo(ctx context.Context, dc DemoConfig) error {
	if dc.DBPrefix == "" {
		dc.DBPrefix = DemoDBPrefixDefault
	}
	if dc.Duration == 0 {
		dc.Duration = DemoDurationDefault
	}
	if dc.Rate == 0 {
		dc.Rate = DemoRateDefault
	}
	if dc.Out == nil {
		dc.Out = io.Discard
	}
	cfg := Config{
		BinDir: dc.BinDir, DatabaseURL: dc.DatabaseURL, Brokers: dc.Brokers, Kafka: dc.Kafka,
		DatabaseOptions: dc.DatabaseOptions, RunDir: dc.RunDir, DBPrefix: dc.DBPrefix,
		Rate: dc.Rate, Out: dc.Out,
	}.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	if dc.Duration < 0 {
		return &ConfigError{"Duration", fmt.Sprintf("must not be negative, got %v", dc.Duration)}
	}
	out := dc.Out
	driver.SetLogger(log.New(io.Discard, "", 0))
	p := newPipeline(cfg, "", dc.RunDir)
	p.quiet = true
	defer p.close(false)

	fmt.Fprintf(out, "herald demo: orders API -> %s (order + outbox event in one transaction) -> 2 relays -> Kafka -> inventory consumer (inbox) -> warehouse API\n", serverName(dc.DatabaseURL))
	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.setup(setupCtx); err != nil {
		return err
	}
	p.deleteOldTopics(setupCtx)
	defer p.shutdown()
	fmt.Fprintf(out, "starting the services (logs in %s) ...\n", dc.RunDir)
	if err := p.startServices(setupCtx, false, nil); err != nil {
		return err
	}
	p.startScraper()
	urls := map[string]string{"inventory": "http://" + p.invAddr + "/metrics"}
	for i, a := range p.relayAddrs {
		urls[fmt.Sprintf("relay-%d", i+1)] = "http://" + a + "/metrics"
	}
	fmt.Fprintf(out, "orders API http://%s   metrics: relay-1 %s  relay-2 %s  inventory %s\n",
		p.ordersAddr, urls["relay-1"], urls["relay-2"], urls["inventory"])
	fmt.Fprintf(out, "sending %.0f orders/s for %v (10%% rolled back on purpose, 25%% cancelled); Ctrl-C stops early\n\n", dc.Rate, dc.Duration)

	loadCtx, stopLoad := context.WithTimeout(ctx, dc.Duration)
	defer stopLoad()
	gen := NewGenerator(Load{BaseURL: "http://" + p.ordersAddr, Concurrency: 2, Rate: dc.Rate})
	loadDone := make(chan LoadResult, 1)
	go func() { loadDone <- gen.Run(loadCtx) }()

	status := &statusLine{out: out, live: dc.Live}
	deadline := time.Now().Add(dc.Duration)
	var res LoadResult
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case res = <-loadDone:
			break loop
		case <-tick.C:
			status.show(p, fmt.Sprintf("%ds left", max(0, int(time.Until(deadline).Seconds()))))
		}
	}
	// Drain: what was committed must come out the other end.
	drainCtx, cancelDrain := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancelDrain()
	var st pipelineState
	for {
		st = p.readState(drainCtx)
		status.show(p, "draining")
		if st.drained() || drainCtx.Err() != nil {
			break
		}
		select {
		case <-drainCtx.Done():
		case <-tick.C:
		}
	}
	status.done()
	if !st.drained() {
		fmt.Fprintf(out, "not drained within a minute: %s\n", st)
	}

	snapshots := p.saveMetrics(urls)
	p.scrapeOnce()
	dups, _ := p.absorbed()
	if err := p.shutdown(); err != nil {
		fmt.Fprintf(out, "stopping: %v\n", err)
	}
	vctx, cancelVerify := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelVerify()
	v, err := Verify(vctx, VerifyInput{
		OrdersDB: p.ordersDB, InventoryDB: p.invDB, WarehouseDB: p.wareDB, Brokers: cfg.Brokers, Kafka: cfg.Kafka, Topic: p.topic,
		Consumer: ConsumerName, RolledBackOrders: res.RolledBackIDs, InitialStock: InitialStock,
	})
	if err != nil {
		return err
	}
	unexpected := 0
	for _, e := range p.sup.Exits() {
		if !e.Requested {
			unexpected++
			fmt.Fprintf(out, "  %s#%d exited unexpectedly: %s (log %s)\n", e.Service, e.Incarnation, e.How, e.Log)
		}
	}

	pr := v.Pipeline
	fmt.Fprintf(out, "\nSummary after %v:\n", time.Since(p.started).Round(time.Second))
	fmt.Fprintf(out, "  orders    %d committed (%d cancelled); %d rolled back on purpose, %d requests failed\n",
		pr.Orders, pr.Cancelled, res.RolledBack, res.CreateFailed+res.CancelFailed)
	fmt.Fprintf(out, "  events    %d committed, %d records on %s (12 partitions), %d consumed; duplicates: %d on the topic, %d absorbed by the inbox\n",
		pr.Events, v.Topic.Records, p.topic, len(v.Inventory.Consumed), v.Topic.Duplicates, dups)
	fmt.Fprintf(out, "  effects   %d orders reserved, %d released, %d warehouse effects (%d repeated calls answered from its idempotency store)\n",
		pr.Reservations, pr.Releases, pr.ReserveEffects+pr.ReleaseEffects, v.WarehouseReplays)
	fmt.Fprintf(out, "  verified  %d lost, %d ghosts, %d out of order, %d double effects (topic read by kcat, the three databases compared)\n",
		v.Lost(), v.Ghosts(), len(v.Topic.OrderViolations), pr.Doubles())
	fmt.Fprintf(out, "  metrics   served while it ran: relay-1 %s, relay-2 %s, inventory %s\n", urls["relay-1"], urls["relay-2"], urls["inventory"])
	if len(snapshots) > 0 {
		fmt.Fprintf(out, "            last readings saved: %s\n", strings.Join(snapshots, " "))
	}
	fmt.Fprintf(out, "  logs      %s\n", filepath.Join(dc.RunDir, "*.log"))
	fmt.Fprintf(out, "  look      HERALD_DATABASE_URL=<your URL with database %s> herald status --topics %s --groups %s\n",
		p.dbNames[0], p.topic, p.group)
	failures := v.Failures(5)
	if n, err := p.deadLettered(vctx); err == nil && n > 0 {
		failures = append(failures, fmt.Sprintf("%d records dead-lettered in %s", n, p.dlqTopic()))
	}
	if unexpected > 0 {
		failures = append(failures, fmt.Sprintf("%d unexpected process exits", unexpected))
	}
	if !st.drained() {
		failures = append(failures, "not drained: "+st.String())
	}
	if len(failures) > 0 {
		fmt.Fprintf(out, "\nPROBLEMS:\n  %s\n", strings.Join(failures, "\n  "))
		return errors.New("the demo found problems (see above)")
	}
	return nil
}

// statusLine prints the pipeline's progress on one line.
type statusLine struct {
	out     io.Writer
	live    bool
	last    time.Time
	printed bool
}

func (s *statusLine) show(p *pipeline, suffix string) {
	if !s.live && time.Since(s.last) < 5*time.Second {
		return
	}
	st := p.readState(context.Background())
	dups, _ := p.absorbed()
	line := fmt.Sprintf("orders %d | published %d | consumed %d | duplicates absorbed %d | backlog %d | lag %d | %s",
		st.Orders, st.Published, st.Consumed, dups, st.Unpublished, st.Lag, suffix)
	if st.Err != nil {
		line = fmt.Sprintf("(%v) | %s", st.Err, suffix)
	}
	s.last = time.Now()
	s.printed = true
	if s.live {
		fmt.Fprintf(s.out, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(s.out, line)
}

func (s *statusLine) done() {
	if s.live && s.printed {
		fmt.Fprintln(s.out)
	}
}

// saveMetrics writes each /metrics page into the run directory.
func (p *pipeline) saveMetrics(urls map[string]string) []string {
	var saved []string
	for name, url := range urls {
		resp, err := scrapeClient.Get(url)
		if err != nil {
			continue
		}
		path := filepath.Join(p.dir, name+".metrics.txt")
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			saved = append(saved, path)
		}
	}
	return saved
}

// deleteOldTopics deletes the topics of earlier demos.
func (p *pipeline) deleteOldTopics(ctx context.Context) {
	topics, err := p.adm.ListTopics(ctx)
	if err != nil {
		return
	}
	for _, t := range topics.Names() {
		if t != p.topic && strings.HasPrefix(t, p.topicBase) {
			p.adm.DeleteTopic(ctx, t)
		}
	}
}

// serverName names the database server dsn reaches, for the demo's banner.
func serverName(dsn string) string {
	if database.IsPostgres(dsn) {
		return "PostgreSQL"
	}
	return "MariaDB"
}
