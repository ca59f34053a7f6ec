// Command bench compares herald with what a team would run instead to move
// outbox events from MariaDB to Kafka (the specification's reference loop,
// Watermill's forwarder, Debezium), on the local stack, in one run of
// interleaved repetitions, and writes the figures as JSON, a Markdown table
// and SVG charts (docs/benchmarks/peers.*). `make bench` runs it.
//
//	bench [run] [flags]       measure, then write the report
//	bench report [flags]      regenerate the Markdown and SVG from a JSON
//	bench reference|watermill the relay processes the harness starts
//
// It is a module of its own so that herald's module never depends on
// Watermill.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd, args := "run", os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = runCommand(ctx, args)
	case "report":
		err = reportCommand(args)
	case "reference":
		err = runReference(ctx, args)
	case "watermill":
		err = runWatermill(ctx, args)
	default:
		err = fmt.Errorf("unknown command %q (run, report, reference, watermill)", cmd)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runCommand parses run's flags (defaults from BENCH_* variables) and runs.
func runCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var cfg Config
	fs.IntVar(&cfg.Reps, "reps", envInt("BENCH_REPS", 2), "interleaved repetitions (env BENCH_REPS)")
	fs.IntVar(&cfg.Events, "events", envInt("BENCH_EVENTS", 100_000), "events in the drained backlog (env BENCH_EVENTS)")
	fs.IntVar(&cfg.Aggregates, "aggregates", envInt("BENCH_AGGREGATES", 1000), "aggregates the events spread over (env BENCH_AGGREGATES)")
	fs.IntVar(&cfg.PayloadBytes, "payload-bytes", envInt("BENCH_PAYLOAD_BYTES", 1024), "payload size (env BENCH_PAYLOAD_BYTES)")
	fs.IntVar(&cfg.Partitions, "partitions", envInt("BENCH_PARTITIONS", 12), "partitions per topic (env BENCH_PARTITIONS)")
	fs.DurationVar(&cfg.DrainBudget, "drain-budget", envDuration("BENCH_DRAIN_BUDGET", 0), "longest drain; past it the rate so far is reported as partial (env BENCH_DRAIN_BUDGET, default 40s)")
	fs.DurationVar(&cfg.ReferenceBudget, "reference-budget", envDuration("BENCH_REFERENCE_BUDGET", 0), "the reference loop's drain budget (env BENCH_REFERENCE_BUDGET, default 15s)")
	fs.DurationVar(&cfg.Sustained, "sustained", envDuration("BENCH_SUSTAINED", 0), "how long writers write at full speed (env BENCH_SUSTAINED, default 10s)")
	fs.IntVar(&cfg.SustainedWriters, "writers", envInt("BENCH_WRITERS", 8), "writers of the sustained runs (env BENCH_WRITERS)")
	fs.IntVar(&cfg.EventsPerTx, "events-per-tx", envInt("BENCH_EVENTS_PER_TX", 10), "events per writer transaction (env BENCH_EVENTS_PER_TX)")
	fs.IntVar(&cfg.DeliveryRate, "delivery-rate", envInt("BENCH_DELIVERY_RATE", 1000), "steady write rate of the delivery runs, events/s (env BENCH_DELIVERY_RATE)")
	fs.DurationVar(&cfg.Delivery, "delivery", envDuration("BENCH_DELIVERY", 0), "how long the steady writer writes (env BENCH_DELIVERY, default 10s)")
	peersFlag := fs.String("peers", os.Getenv("BENCH_PEERS"), "comma-separated peers to run (env BENCH_PEERS; default all: "+strings.Join(peerNames(), ",")+")")
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.StringVar(&cfg.MySQLAddr, "mysql-addr", "127.0.0.1:3306", "MariaDB address (user herald/herald)")
	fs.StringVar(&cfg.Out, "out", "../docs/benchmarks", "directory of peers.json, peers.md and the SVG charts")
	fs.StringVar(&cfg.Herald, "herald", "", "herald binary (default: built from ../cmd/herald)")
	fs.StringVar(&cfg.Debezium, "debezium", "debezium", "directory of Debezium's build.sh and run.sh")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *peersFlag != "" {
		cfg.Peers = strings.Split(*peersFlag, ",")
	}
	cfg.Brokers = strings.Split(*brokers, ",")
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	return run(ctx, cfg, os.Stdout)
}

// reportCommand regenerates peers.md and the charts from a peers.json.
func reportCommand(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	in := fs.String("in", "../docs/benchmarks/peers.json", "the run's JSON")
	out := fs.String("out", "../docs/benchmarks", "directory of peers.md and the SVG charts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := readResults(*in)
	if err != nil {
		return err
	}
	return writeReport(*out, r)
}
