package drill

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/verify"
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
	evidence  func(ctx context.Context, v *Verification) []string
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
	if r.evidence != nil {
		for _, f := range r.evidence(verifyCtx, v) {
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

// restartCommand returns the stop/start command of a broker or database
// drill, or why the drill is skipped.
func (r *drillRun) restartCommand() (cmd string, skip string) {
	cfg := r.cfg
	nodeSh := filepath.Join(cfg.StackDir, "node.sh")
	_, err := os.Stat(nodeSh)
	noStack := err != nil
	switch r.d.kind {
	case faultKafka:
		if cfg.RestartKafka != "" {
			return cfg.RestartKafka, ""
		}
		for _, b := range cfg.Brokers {
			if !isLocal(b) {
				return "", "skipped: the brokers are not local; pass --restart-kafka-cmd"
			}
		}
		if noStack {
			return "", "skipped: no " + nodeSh + " (--stack-dir); pass --restart-kafka-cmd"
		}
		return "", "" // the broker is chosen once the topic exists
	case faultMySQL:
		if cfg.RestartMySQL != "" {
			return cfg.RestartMySQL, ""
		}
		node, addr := "mariadb", ""
		if database.IsPostgres(cfg.DatabaseURL) {
			if u, err := url.Parse(cfg.DatabaseURL); err == nil {
				node, addr = "postgres", u.Host
			}
		} else if c, err := driver.ParseDSN(cfg.DatabaseURL); err == nil && c.Net == "tcp" {
			addr = c.Addr
		}
		if addr == "" || !isLocal(addr) {
			return "", "skipped: the database server is not local; pass --restart-mysql-cmd"
		}
		if noStack {
			return "", "skipped: no " + nodeSh + " (--stack-dir); pass --restart-mysql-cmd"
		}
		return shellQuote(nodeSh) + " $1 " + node, ""
	}
	return "", ""
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func isLocal(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// inject performs the drill's fault, returning when it is over (the
// process restarted, the broker or database back). tracker receives the
// recovery measurement, which starts when the fault ends.
func (r *drillRun) inject(ctx context.Context, restart string, tracker chan<- recoveryResult) error {
	p, d := r.pipeline, r.d
	f := &r.rep.Injection
	switch d.kind {
	case faultRelaysLate:
		f.Detail = "relays started after the load"
		f.Target = "relay-1, relay-2"
		f.StartedAt = p.started.UTC()
		select {
		case <-r.loadDone:
		case <-ctx.Done():
			return ctx.Err()
		}
		st := p.readState(ctx)
		ends, err := kafka.EndOffsets(ctx, p.adm, p.topic)
		var records int64
		for _, e := range ends {
			records += e.End
		}
		if err == nil && st.Err == nil {
			r.faultNote = append(r.faultNote, fmt.Sprintf("before the relays started: %d events committed, %d unpublished, %d records on the topic", st.Events, st.Unpublished, records))
			if st.Unpublished != st.Events || records != 0 || st.Events == 0 {
				return fmt.Errorf("before the relays started, want every event unpublished and an empty topic: %s, %d records", st, records)
			}
		}
		p.note("starting the relays: %d events waiting", st.Unpublished)
		if err := p.startRelays(ctx, nil); err != nil {
			return err
		}
		r.endFault(ctx, tracker)
		return nil

	case faultFailpoint:
		return r.injectFailpoint(ctx, tracker)

	case faultSlotDropped:
		if err := r.waitThird(ctx); err != nil {
			return err
		}
		herald := filepath.Join(r.cfg.BinDir, "herald")
		f.Detail = "herald stream drop --force on the orders database, mid-load"
		f.Target = "the replication slot of relay-1's stream"
		f.StartedAt = time.Now().UTC()
		p.note("dropping the stream's replication slot under its leader")
		cmd := exec.CommandContext(ctx, herald, "stream", "drop", "--force")
		cmd.Env = append(p.connEnv(), "HERALD_DATABASE_URL="+p.dsns[0])
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("herald stream drop --force: %w: %s", err, out)
		}
		p.note("%s", strings.TrimSpace(string(out)))
		r.endFault(ctx, tracker)
		return nil

	case faultKafka, faultMySQL:
		if err := r.waitThird(ctx); err != nil {
			return err
		}
		target := "database server"
		if d.kind == faultKafka {
			node, err := r.kafkaNode(ctx)
			if err != nil {
				return err
			}
			target = "kafka-" + node
			if restart == "" {
				restart = shellQuote(filepath.Join(r.cfg.StackDir, "node.sh")) + " $1 kafka-" + node
			}
		}
		f.Detail = fmt.Sprintf("%s down for %v: %q stop / start", target, r.cfg.Outage, restart)
		f.Target = target
		f.StartedAt = time.Now().UTC()
		p.note("stopping %s", target)
		if err := runRestart(ctx, restart, "stop", filepath.Join(p.dir, "restart.log")); err != nil {
			// A failed stop may have stopped it anyway: start it again.
			runRestart(context.WithoutCancel(ctx), restart, "start", filepath.Join(p.dir, "restart.log"))
			return fmt.Errorf("stop %s: %w", target, err)
		}
		p.note("%s stopped; starting it again in %v", target, r.cfg.Outage)
		select {
		case <-time.After(r.cfg.Outage):
		case <-ctx.Done():
		}
		// Restored even when the drill was interrupted.
		startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		if err := runRestart(startCtx, restart, "start", filepath.Join(p.dir, "restart.log")); err != nil {
			return fmt.Errorf("start %s again: %w (see %s)", target, err, filepath.Join(p.dir, "restart.log"))
		}
		p.note("%s started", target)
		r.endFault(ctx, tracker)
		return nil
	}
	return nil
}

// waitThird waits until a third of the orders were accepted: a fault
// mid-load.
func (r *drillRun) waitThird(ctx context.Context) error {
	for r.gen.Accepted() < r.cfg.Events/3 {
		select {
		case <-r.loadDone:
			return errors.New("the load ended before the fault could be injected")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// endFault marks the end of the fault and starts measuring recovery.
func (r *drillRun) endFault(ctx context.Context, tracker chan<- recoveryResult) {
	r.faultEnd = time.Now()
	r.rep.Injection.EndedAt = r.faultEnd.UTC()
	r.rep.Injection.Injected = true
	go func() { tracker <- r.trackRecovery(ctx) }()
}

// kafkaNode picks the broker to restart: the leader of partition 0 of the
// drill's topic (in the one-broker layout, the only node).
func (r *drillRun) kafkaNode(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		descs, err := kafka.DescribeTopics(ctx, r.adm, r.topic)
		for _, d := range descs {
			for _, part := range d.Partitions {
				if err == nil && part.Partition == 0 && part.Leader >= 0 {
					return fmt.Sprint(part.Leader), nil
				}
			}
		}
		if err == nil {
			err = fmt.Errorf("topic %s: no leader for partition 0", r.topic)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("choose the broker to restart: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runRestart runs `sh -c CMD sh ACTION`: the command sees stop or start as
// $1 (and, if it does not mention $1, gets it appended).
func runRestart(ctx context.Context, command, action, logPath string) error {
	if !strings.Contains(command, "$1") {
		command += ` "$1"`
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "--- %s: sh -c %q sh %s\n", time.Now().UTC().Format(time.RFC3339Nano), command, action)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command, "sh", action)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", command, action, err)
	}
	return nil
}

// injectFailpoint waits for the target's first incarnation to die at its
// failpoint and for the supervisor's restart to be ready.
func (r *drillRun) injectFailpoint(ctx context.Context, tracker chan<- recoveryResult) error {
	p, d := r.pipeline, r.d
	f := &r.rep.Injection
	proc := p.procByName(d.target)
	spec := d.FailpointSpec(r.cfg.Events)
	f.Detail = fmt.Sprintf("%s with HERALD_FAILPOINTS=%s", d.target, spec)
	f.Target = d.target
	// The failpoint must fire while the load runs (or soon after).
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.loadDone:
			select {
			case <-time.After(30 * time.Second):
				cancel()
			case <-waitCtx.Done():
			}
		case <-waitCtx.Done():
		}
	}()
	if err := proc.WaitExit(waitCtx, 1); err != nil {
		return fmt.Errorf("%s never reached %s (load over)", d.target, spec)
	}
	var exit Exit
	for _, e := range p.sup.Exits() {
		if e.Service == d.target && e.Incarnation == 1 {
			exit = e
		}
	}
	f.StartedAt = exit.At.UTC()
	if !exit.Failpoint {
		return fmt.Errorf("%s#1 ended (%s), but not at its failpoint", d.target, exit.How)
	}
	// What the dead process left behind, before anyone takes it over.
	r.atDeath(ctx, exit)
	readyCtx, cancelReady := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelReady()
	if err := proc.WaitReady(readyCtx, 2); err != nil {
		return err
	}
	p.note("%s#2 ready", d.target)
	r.endFault(ctx, tracker)
	return nil
}

// atDeath records what a process left behind when it died at its
// failpoint, and sets the evidence check run after verification: proof
// that the crash happened in the window the drill is about.
func (r *drillRun) atDeath(ctx context.Context, exit Exit) {
	p, d := r.pipeline, r.d
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch d.target {
	case "relay-1", "relay-2":
		deadID := RelayID(d.target, 1)
		// The failpoint's crash line lists the batch the relay had in hand
		// (a claim writes nothing to the rows, so the log is the record).
		logText, err := os.ReadFile(exit.Log)
		if err != nil {
			r.faultNote = append(r.faultNote, "orphaned events: "+err.Error())
			return
		}
		orphans := failpoint.EventsAtCrash(string(logText))
		p.note("%s died with %d events in hand", deadID, len(orphans))
		r.faultNote = append(r.faultNote, fmt.Sprintf("%s died with %d events in hand", deadID, len(orphans)))
		r.evidence = func(ctx context.Context, v *Verification) []string {
			if len(orphans) == 0 {
				return []string{"the relay died holding no event"}
			}
			var out []string
			acked, sentOnce, retaken := 0, 0, 0
			for _, id := range orphans {
				switch v.Topic.Copies[id] {
				case 0:
				case 1:
					sentOnce++
				default:
					acked++
				}
				var published bool
				if err := p.ordersDB.QueryRowContext(ctx, p.sql("SELECT "+verify.PublishedSQL+" FROM outbox_events WHERE id = ?"), id).Scan(&published); err == nil && published {
					retaken++ // the dead relay never marked anything after its failpoint
				}
			}
			r.rep.Injection.Notes = append(r.rep.Injection.Notes, fmt.Sprintf("of the %d orphaned events: %d published after the takeover; %d on the topic twice or more, %d once",
				len(orphans), retaken, acked, sentOnce))
			if retaken != len(orphans) {
				out = append(out, fmt.Sprintf("only %d of %d orphaned events were published after the takeover", retaken, len(orphans)))
			}
			switch d.failpoint {
			case "relay.after_ack_before_mark", "stream.after_ack_before_checkpoint":
				// Kafka had acknowledged them: the takeover sent them again.
				if acked != len(orphans) {
					out = append(out, fmt.Sprintf("after_ack: %d of %d orphaned events are on the topic more than once", acked, len(orphans)))
				}
				// The consumer ran throughout, so its count is exact: every
				// copy sent again was dropped by the inbox.
				if r.rep.DuplicatesAbsorbed < int64(v.Topic.Duplicates) {
					out = append(out, fmt.Sprintf("after_ack: the inbox dropped %d records, the topic holds %d duplicates", r.rep.DuplicatesAbsorbed, v.Topic.Duplicates))
				}
			default:
				// Claimed, never sent: exactly one copy each.
				if sentOnce != len(orphans) {
					out = append(out, fmt.Sprintf("%s: %d of %d orphaned events are on the topic exactly once", d.failpoint, sentOnce, len(orphans)))
				}
			}
			return out
		}
	case "inventory":
		var pending int
		p.invDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'pending'").Scan(&pending)
		r.faultNote = append(r.faultNote, fmt.Sprintf("at the crash: %d warehouse calls pending", pending))
		switch d.failpoint {
		case "consumer.after_commit_before_offset":
			r.evidence = func(context.Context, *Verification) []string {
				if r.rep.DuplicatesAbsorbed == 0 {
					return []string{"no redelivered record was dropped by the inbox after the restart"}
				}
				return nil
			}
		case "consumer.after_commit_before_call":
			r.evidence = func(context.Context, *Verification) []string {
				if pending == 0 {
					return []string{"no warehouse call was pending when the consumer died"}
				}
				return nil
			}
		}
	case "orders":
		id, kind := lastOrderLogged(exit.Log)
		if id == 0 {
			r.faultNote = append(r.faultNote, "the dead orders process logged no order")
			r.evidence = func(context.Context, *Verification) []string {
				return []string{"the orders API died without having committed an order"}
			}
			return
		}
		p.note("orders#1 died after committing %s of order %d, before answering", kind, id)
		r.faultNote = append(r.faultNote, fmt.Sprintf("orders#1 died after committing %s of order %d, before answering", kind, id))
		r.evidence = func(_ context.Context, v *Verification) []string {
			for _, o := range v.Orders.Orders {
				if o.ID != id {
					continue
				}
				if kind == "order cancelled" && o.Status != "cancelled" {
					return []string{fmt.Sprintf("order %d: the cancel committed before the crash is not in the database", id)}
				}
				for _, cid := range r.loadRes.CreatedIDs {
					if cid == id && kind == "order created" {
						return []string{fmt.Sprintf("order %d: the client got an answer, yet the process died before answering", id)}
					}
				}
				return nil
			}
			return []string{fmt.Sprintf("order %d, committed before the crash, is not in the database", id)}
		}
	}
}

// lastOrderLogged returns the order of the orders API's last "order
// created" or "order cancelled" log line.
func lastOrderLogged(logPath string) (int64, string) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	var id int64
	var kind string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			OrderID int64  `json:"order_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Msg == "order created" || line.Msg == "order cancelled") {
			id, kind = line.OrderID, line.Msg
		}
	}
	return id, kind
}

// recoveryResult is when the pipeline had caught up with the fault.
type recoveryResult struct {
	at   time.Time
	what string
	err  error
}

// trackRecovery measures how long after the fault the pipeline caught up
// with it: every event committed by the end of the fault is published,
// then the consumer group has committed offsets up to where the topic
// ended at that moment (the lag the fault left is 0), every such event is
// in the inbox and no warehouse call of them is pending.
func (r *drillRun) trackRecovery(ctx context.Context) recoveryResult {
	p := r.pipeline
	deadline := time.Now().Add(r.cfg.Timeout + 30*time.Second)
	var ids []any
	for ids == nil {
		got, err := queryStrings(ctx, p.ordersDB, "SELECT id FROM outbox_events")
		if err == nil {
			ids = make([]any, len(got))
			for i, id := range got {
				ids[i] = id
			}
		}
		if time.Now().After(deadline) {
			return recoveryResult{err: fmt.Errorf("outbox unreadable: %v", err)}
		}
		if err != nil {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if len(ids) == 0 {
		return recoveryResult{at: time.Now(), what: "no event committed"}
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")"
	var ends map[int32]int64
	for {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return recoveryResult{err: fmt.Errorf("%d events committed by the end of the fault not through the pipeline in time", len(ids))}
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		done := func() bool {
			defer cancel()
			if ends == nil {
				var unpublished int
				if err := p.ordersDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM outbox_events WHERE NOT "+verify.PublishedSQL+" AND id IN "+in), ids...).Scan(&unpublished); err != nil || unpublished > 0 {
					return false
				}
				offs, err := kafka.EndOffsets(qctx, p.adm, p.topic)
				if err != nil {
					return false
				}
				ends = map[int32]int64{}
				for _, o := range offs {
					ends[o.Partition] = o.End
				}
			}
			_, lags, err := kafka.GroupLag(qctx, p.adm, p.group, p.topic)
			if err != nil {
				return false
			}
			for _, l := range lags {
				if l.Committed < ends[l.Partition] && ends[l.Partition] > 0 {
					return false
				}
			}
			var consumed, pending int
			if err := p.invDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM consumed_events WHERE consumer_name = ? AND event_id IN "+in),
				append([]any{ConsumerName}, ids...)...).Scan(&consumed); err != nil || consumed < len(ids) {
				return false
			}
			if err := p.invDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM warehouse_calls WHERE status <> 'done' AND idempotency_key IN "+in), ids...).Scan(&pending); err != nil || pending > 0 {
				return false
			}
			return true
		}()
		if done {
			return recoveryResult{at: time.Now(), what: fmt.Sprintf("the %d events committed by then are published, consumed (offsets committed) and called", len(ids))}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitDrained polls until the pipeline has nothing left to do.
func (r *drillRun) waitDrained(ctx context.Context) (pipelineState, error) {
	var st pipelineState
	for {
		st = r.readState(ctx)
		if st.drained() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return r.readState(context.WithoutCancel(ctx)), ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// queryStrings runs a one-column query.
func queryStrings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
