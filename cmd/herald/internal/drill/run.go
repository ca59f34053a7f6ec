package drill

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// Run runs drills one after the other and returns the report. An error
// means the run could not start (bad configuration); a drill that fails or
// cannot complete is in the report.
func Run(ctx context.Context, cfg Config, drills []Drill) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, err
	}
	// The driver logs dropped connections to stderr; during a database
	// restart that is expected, and the drill reports what matters.
	driver.SetLogger(log.New(io.Discard, "", 0))
	rep := &Report{
		Command: cfg.Command, StartedAt: time.Now().UTC(), RunDir: cfg.RunDir,
		Settings: Settings{
			Database: databaseName(cfg.DatabaseURL), Source: cfg.Source, Events: cfg.Events, Rate: cfg.Rate, Concurrency: cfg.Concurrency, Lease: cfg.Lease.String(),
			SessionTimeout: cfg.SessionTimeout.String(), Outage: cfg.Outage.String(), RestartDelay: cfg.RestartDelay.String(),
		},
	}
	for _, d := range drills {
		if ctx.Err() != nil {
			rep.Drills = append(rep.Drills, DrillReport{Name: d.Name, Fault: d.Fault, Proves: d.Proves, Window: d.Window,
				Verdict: VerdictError, Failures: []string{"not run: interrupted"}})
			continue
		}
		fmt.Fprintf(cfg.Out, "=== drill %s: %s\n", d.Name, d.Fault)
		dr := runDrill(ctx, cfg, d)
		if dr.Brokers > 0 {
			rep.Brokers = dr.Brokers
		}
		fmt.Fprintf(cfg.Out, "--- %s: %s (%s)\n", d.Name, strings.ToUpper(dr.Verdict), dr.oneLine())
		for _, f := range dr.Failures {
			fmt.Fprintf(cfg.Out, "      %s\n", f)
		}
		rep.Drills = append(rep.Drills, dr)
	}
	rep.FinishedAt = time.Now().UTC()
	rep.DurationSeconds = rep.FinishedAt.Sub(rep.StartedAt).Seconds()
	rep.Verdict = VerdictPass
	for _, d := range rep.Drills {
		if d.Verdict == VerdictFail || d.Verdict == VerdictError {
			rep.Verdict = VerdictFail
		}
	}
	return rep, nil
}

// drillRun is one drill in progress.
type drillRun struct {
	*pipeline
	d   Drill
	rep *DrillReport
	gen *Generator

	loadDone  chan struct{}
	loadRes   LoadResult
	faultEnd  time.Time
	loadEnd   time.Time
	judge     judge // the drill's evidence function's verdict on the fault, or nil
	faultNote []string
}

func runDrill(ctx context.Context, cfg Config, d Drill) (dr DrillReport) {
	dir := filepath.Join(cfg.RunDir, d.Name)
	p := newPipeline(cfg, d.Name, dir)
	r := &drillRun{pipeline: p, d: d, loadDone: make(chan struct{})}
	dr = DrillReport{
		Name: d.Name, Window: d.Window, Fault: d.Fault, Proves: d.Proves, StartedAt: p.started.UTC(),
		LogDir: dir, Topic: p.topic, Databases: p.dbNames[:],
	}
	r.rep = &dr
	failed := func(format string, args ...any) {
		dr.Failures = append(dr.Failures, fmt.Sprintf(format, args...))
	}
	defer func() {
		dr.DurationSeconds = time.Since(p.started).Seconds()
		dr.Timeline = p.timelineCopy()
		if p.sup != nil {
			dr.Exits = p.sup.Exits()
		}
		switch {
		case dr.Verdict == VerdictSkipped:
		case dr.errored:
			dr.Verdict = VerdictError
		case len(dr.Failures) > 0:
			dr.Verdict = VerdictFail
		default:
			dr.Verdict = VerdictPass
		}
		keep := cfg.Keep || dr.Verdict != VerdictPass
		if dr.Verdict == VerdictSkipped {
			keep = false
		}
		p.close(!keep)
		dr.Kept = keep
	}()
	errored := func(format string, args ...any) {
		dr.errored = true
		failed(format, args...)
	}

	restart, skip := r.restartCommand()
	if skip != "" {
		dr.Verdict = VerdictSkipped
		dr.Failures = []string{skip}
		return dr
	}

	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.setup(setupCtx); err != nil {
		errored("setup: %v", err)
		return dr
	}
	dr.Brokers = p.brokers
	failpoints := map[string]string{}
	if d.kind == faultFailpoint {
		failpoints[d.target] = d.FailpointSpec(cfg.Events)
	}
	defer func() {
		if err := p.shutdown(); err != nil {
			dr.Notes = append(dr.Notes, err.Error())
		}
	}()
	if err := p.startServices(setupCtx, d.kind == faultRelaysLate, failpoints); err != nil {
		errored("start services: %v", err)
		return dr
	}
	p.startScraper()

	r.gen = NewGenerator(Load{
		BaseURL: "http://" + p.ordersAddr, Orders: cfg.Events, Concurrency: cfg.Concurrency, Rate: cfg.Rate,
	})
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	p.note("load: %d orders at %.0f/s from %d clients (10%% rolled back on purpose, 25%% of the created cancelled)", cfg.Events, cfg.Rate, cfg.Concurrency)
	go func() {
		defer close(r.loadDone)
		r.loadRes = r.gen.Run(loadCtx)
		r.loadEnd = time.Now()
		p.note("load done: %d created, %d rolled back, %d failed; %d cancelled", r.loadRes.Created, r.loadRes.RolledBack, r.loadRes.CreateFailed, r.loadRes.Cancelled)
	}()

	tracker := make(chan recoveryResult, 1)
	if err := r.inject(ctx, restart, tracker); err != nil {
		errored("fault: %v", err)
		stopLoad()
	}
	select {
	case <-r.loadDone:
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		errored("interrupted")
		return dr
	}

	// Drain: everything published, consumed and called.
	drainFrom := r.loadEnd
	if r.faultEnd.After(drainFrom) {
		drainFrom = r.faultEnd
	}
	drainCtx, cancelDrain := context.WithTimeout(ctx, cfg.Timeout)
	defer cancelDrain()
	final, err := r.waitDrained(drainCtx)
	if err != nil {
		errored("not drained after %v: %s", cfg.Timeout, final)
	} else {
		dr.DrainSeconds = seconds(time.Since(drainFrom))
		p.note("drained: %s", final)
	}
	if !r.faultEnd.IsZero() {
		select {
		case res := <-tracker:
			if res.err != nil {
				errored("recovery: %v", res.err)
			} else {
				dr.RecoverySeconds = seconds(res.at.Sub(r.faultEnd))
				p.note("recovered %.1fs after the fault ended: %s", res.at.Sub(r.faultEnd).Seconds(), res.what)
			}
		case <-time.After(30 * time.Second):
			errored("recovery never observed")
		}
	}
	r.rep.Injection.Notes = r.faultNote

	// shutdown takes a last /stats reading first: the pipeline is drained,
	// so the running consumer's count is final.
	if err := p.shutdown(); err != nil {
		dr.Notes = append(dr.Notes, err.Error())
	}
	dr.DuplicatesAbsorbed, _ = p.absorbed()
	for _, e := range p.sup.Exits() {
		switch {
		case e.Requested && !e.Clean:
			dr.Notes = append(dr.Notes, fmt.Sprintf("%s#%d did not exit cleanly on SIGTERM: %s", e.Service, e.Incarnation, e.How))
		case e.Requested:
		case e.Failpoint && d.kind == faultFailpoint && e.Service == d.target && e.Incarnation == 1:
		default:
			failed("unexpected exit: %s#%d %s at +%.1fs (log %s)", e.Service, e.Incarnation, e.How, e.At.Sub(p.started).Seconds(), e.Log)
		}
	}

	verifyCtx, cancelVerify := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelVerify()
	v, err := Verify(verifyCtx, VerifyInput{
		OrdersDB: p.ordersDB, InventoryDB: p.invDB, WarehouseDB: p.wareDB, Brokers: cfg.Brokers, Kafka: cfg.Kafka, Topic: p.topic,
		Consumer: ConsumerName, RolledBackOrders: r.loadRes.RolledBackIDs, InitialStock: InitialStock,
	})
	if err != nil {
		errored("verify: %v", err)
		return dr
	}
	r.fill(v)
	if n, err := p.deadLettered(verifyCtx); err != nil {
		dr.Notes = append(dr.Notes, "dead-letter topic: "+err.Error())
	} else if dr.DeadLettered = n; n > 0 {
		failed("DEAD-LETTERED: %d records in %s: the consumer gave up on them", n, p.dlqTopic())
	}
	if dr.Orders.CreateFailed+r.loadRes.CancelFailed > 0 || dr.Orders.CommittedUnanswered > 0 {
		r.rep.Injection.Notes = append(r.rep.Injection.Notes, fmt.Sprintf("clients: %d requests failed (%s); %d orders committed without a 201 reaching the client",
			dr.Orders.CreateFailed+r.loadRes.CancelFailed, errorSummary(r.loadRes.Errors), dr.Orders.CommittedUnanswered))
	}
	for _, f := range v.Failures(5) {
		failed("%s", f)
	}
	if r.judge != nil {
		for _, f := range r.judge(verifyCtx, v) {
			failed("fault not exercised: %s", f)
		}
	}
	return dr
}

// errorSummary lists failure kinds, most frequent first.
func errorSummary(errs map[string]int) string {
	kinds := make([]string, 0, len(errs))
	for k := range errs {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return errs[kinds[i]] > errs[kinds[j]] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", errs[k], k)
	}
	return strings.Join(parts, ", ")
}

func seconds(d time.Duration) *float64 {
	s := float64(d.Round(100*time.Millisecond)) / float64(time.Second)
	return &s
}

// fill copies the verification's numbers into the drill's report.
func (r *drillRun) fill(v *Verification) {
	dr := r.rep
	dr.Load = r.loadRes
	dr.Orders = OrdersSummary{
		Attempted: r.loadRes.Attempted, Answered201: r.loadRes.Created, AnsweredRolledBack: r.loadRes.RolledBack,
		CreateFailed: r.loadRes.CreateFailed, Committed: v.Pipeline.Orders, Cancelled: v.Pipeline.Cancelled,
	}
	answered := map[int64]bool{}
	for _, id := range r.loadRes.CreatedIDs {
		answered[id] = true
	}
	for _, o := range v.Orders.Orders {
		if !answered[o.ID] {
			dr.Orders.CommittedUnanswered++
		}
	}
	dr.Events = v.Pipeline.Events
	dr.TopicRecords = v.Topic.Records
	dr.Lost = v.Lost()
	dr.Ghosts = v.Ghosts()
	dr.OrderViolations = len(v.Topic.OrderViolations)
	dr.DuplicatesOnTopic = v.Topic.Duplicates
	dr.DuplicatedEvents = v.Topic.DuplicatedEvents
	dr.DoubleEffects = v.Pipeline.Doubles()
	dr.Reservations = v.Pipeline.Reservations
	dr.Releases = v.Pipeline.Releases
	dr.WarehouseEffects = v.Pipeline.ReserveEffects + v.Pipeline.ReleaseEffects
	dr.WarehouseReplays = v.WarehouseReplays
	dr.Problems = v.Problems(5)
}
