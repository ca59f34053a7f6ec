package drill

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
)

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
	r.collectEvidence(ctx, exit)
	readyCtx, cancelReady := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelReady()
	if err := proc.WaitReady(readyCtx, 2); err != nil {
		return err
	}
	p.note("%s#2 ready", d.target)
	r.endFault(ctx, tracker)
	return nil
}
