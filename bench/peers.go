package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// peer is one way to get outbox events from MariaDB to Kafka.
type peer struct {
	name        string
	label       string
	description string
	table       string
	// resumes says that the peer streams from where it stopped rather than
	// reading what is in the table: its drain is started, made ready,
	// stopped, the backlog written, and started again.
	resumes bool
	// budget bounds its drain.
	budget func(Config) time.Duration
	// start launches its processes for one measurement.
	start func(ctx context.Context, h *harness, env peerEnv) ([]*process, error)
	// expectedRate guesses its drain rate (events/s) for the plan's
	// estimate only.
	expectedRate float64
	// startup guesses the seconds one start takes, for the estimate.
	startup float64
}

// peerEnv is where one measurement of a peer happens.
type peerEnv struct {
	tag      string // names its processes' logs
	database string
	dsn      string
	topic    string
	stateDir string // kept across the restarts of one measurement
}

func drainBudget(c Config) time.Duration     { return c.DrainBudget }
func referenceBudget(c Config) time.Duration { return c.ReferenceBudget }

// peers are every peer the harness knows, in the report's order.
var peers = []peer{
	{name: "reference", label: "reference loop", table: heraldTable, budget: referenceBudget, expectedRate: 300,
		description: "the specification's reference loop: claim 100 with SELECT ... FOR UPDATE SKIP LOCKED, " +
			"record the lease, commit; then per event a synchronous produce (acks=all) and its own UPDATE published_at",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			p, err := startProcess(env.tag+"-reference", h.workDir, nil, h.self, "reference",
				"--dsn", env.dsn, "--brokers", strings.Join(h.cfg.Brokers, ","), "--topic", env.topic)
			return []*process{p}, err
		}},
	{name: "watermill", label: "Watermill forwarder (defaults)", table: watermillTable, budget: drainBudget, expectedRate: 1800,
		description: "Watermill v1.5.1 components/forwarder as its documentation sets up an outbox: writers publish through the " +
			"forwarder's publisher over a watermill-sql/v4 MySQL publisher on their own transaction; the forwarder reads with a " +
			"watermill-sql MySQL subscriber (defaults: batch 100, poll 1 s, SERIALIZABLE reads) and sends with a watermill-kafka/v3 " +
			"publisher (defaults: sarama sync producer, acks=1), key = aggregate id (its partitioning marshaler)",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			p, err := startProcess(env.tag+"-watermill", h.workDir, nil, h.self, "watermill",
				"--dsn", env.dsn, "--brokers", strings.Join(h.cfg.Brokers, ","))
			return []*process{p}, err
		}},
	{name: "watermill-batch1000", label: "Watermill forwarder (subscribe batch 1000)", table: watermillTable, budget: drainBudget, expectedRate: 2500,
		description: "the same forwarder with one setting tuned: the MySQL subscriber's SubscribeBatchSize 1000 " +
			"(default 100), fewer subscriber transactions per event",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			p, err := startProcess(env.tag+"-watermill-batch1000", h.workDir, nil, h.self, "watermill",
				"--dsn", env.dsn, "--brokers", strings.Join(h.cfg.Brokers, ","), "--subscribe-batch", "1000")
			return []*process{p}, err
		}},
	{name: "debezium", label: "Debezium", table: heraldTable, budget: drainBudget, resumes: true, expectedRate: 4000, startup: 15,
		description: "Debezium's MariaDB connector with the Outbox Event Router in Kafka Connect standalone (bench/debezium/run.sh): " +
			"reads MariaDB's binlog, every event of outbox_events to one topic, key = aggregate_id, value = payload, " +
			"event id in header id; snapshot mode no_data, producer acks=all, idempotent",
		start: startDebezium},
	{name: "herald-poll-1", label: "herald, polling, 1 relay", table: heraldTable, budget: drainBudget, expectedRate: 8000,
		description: "herald relay --source poll (the defaults), one process",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			return startHerald(h, env, 1, "poll")
		}},
	{name: "herald-poll-2", label: "herald, polling, 2 relays", table: heraldTable, budget: drainBudget, expectedRate: 8000,
		description: "herald relay --source poll (the defaults), two processes sharing the outbox by bucket leases",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			return startHerald(h, env, 2, "poll")
		}},
	{name: "herald-binlog", label: "herald, binlog, 1 relay", table: heraldTable, budget: drainBudget, resumes: true, expectedRate: 8000,
		description: "herald relay --source binlog, one process (drain: the stream resumes from its checkpoint)",
		start: func(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
			return startHerald(h, env, 1, "binlog")
		}},
}

func peerNames() []string {
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.name
	}
	return names
}

// startHerald runs n `herald relay` processes with explicit flags.
func startHerald(h *harness, env peerEnv, n int, source string) ([]*process, error) {
	var procs []*process
	for i := range n {
		addr, err := freeAddr()
		if err != nil {
			return procs, err
		}
		id := fmt.Sprintf("%s-%d", env.tag, i)
		p, err := startProcess(id+"-herald", h.workDir, nil, h.cfg.Herald, "relay",
			"--database-url", env.dsn, "--kafka-brokers", strings.Join(h.cfg.Brokers, ","),
			"--topic", "order="+env.topic, "--metrics-addr", addr, "--relay-id", id, "--source", source)
		if err != nil {
			return procs, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// startDebezium runs the other side's run.sh (which execs the JVM, so the
// process measured is Debezium's), configured by its environment contract.
func startDebezium(ctx context.Context, h *harness, env peerEnv) ([]*process, error) {
	run := filepath.Join(h.cfg.Debezium, "run.sh")
	if _, err := os.Stat(run); err != nil {
		return nil, fmt.Errorf("debezium: %w", err)
	}
	host, port, err := net.SplitHostPort(h.cfg.MySQLAddr)
	if err != nil {
		return nil, fmt.Errorf("debezium: --mysql-addr: %w", err)
	}
	rest, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, restPort, _ := net.SplitHostPort(rest)
	vars := []string{
		"DBZ_REST_PORT=" + restPort,
		"DBZ_DB_HOST=" + host, "DBZ_DB_PORT=" + port, "DBZ_DB_USER=herald", "DBZ_DB_PASSWORD=herald",
		"DBZ_DB_NAME=" + env.database, "DBZ_TABLE=outbox_events",
		"DBZ_KAFKA_BOOTSTRAP=" + h.cfg.Brokers[0], "DBZ_TOPIC=" + env.topic,
		"DBZ_STATE_DIR=" + env.stateDir, "DBZ_SERVER_ID=" + strconv.Itoa(h.nextServerID()),
		"DBZ_SNAPSHOT_MODE=no_data",
	}
	p, err := startProcess(env.tag+"-debezium", h.workDir, vars, "bash", run)
	if err != nil {
		return nil, err
	}
	return []*process{p}, nil
}

// exitedEarly is an error naming the first of procs that exited, with the
// end of its log: a relay is never meant to stop by itself.
func exitedEarly(procs []*process) error {
	for _, p := range procs {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.name, p.err, p.tail(15))
		}
	}
	return nil
}

// stopAll stops procs, the errors of those that did not stop cleanly
// joined.
func stopAll(procs []*process) error {
	var errs []error
	for _, p := range procs {
		if p == nil {
			continue
		}
		if err := p.stop(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
