// Command bench compares herald with what a team would run instead to move
// outbox events from MariaDB to Kafka (the specification's reference loop,
// Watermill's forwarder, Debezium), on the local stack, in one run of
// interleaved repetitions, and writes the figures as JSON, a Markdown table
// and SVG charts (docs/benchmarks/peers.*). `make bench` runs it.
//
//	bench [run] [flags]       measure, then write the report
//	bench report [flags]      regenerate the Markdown and SVG from a JSON
//	bench writers [flags]     the cost of the SQL contract (docs/benchmarks/writers.md)
//	bench bigtx [flags]       one transaction of 1,000,000 events (docs/benchmarks/bigtx.md)
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

	"github.com/herald-outbox/herald/testkit/localstack"
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
	case "writers":
		err = writersCommand(ctx, args)
	case "bigtx":
		err = bigTxCommand(ctx, args)
	case "reference":
		err = runReference(ctx, args)
	case "watermill":
		err = runWatermill(ctx, args)
	default:
		err = fmt.Errorf("unknown command %q (run, report, writers, bigtx, reference, watermill)", cmd)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runEnv names the BENCH_* variable that sets each of run's flags; the
// command line wins over the variable.
var runEnv = map[string]string{
	"reps": "BENCH_REPS", "events": "BENCH_EVENTS", "aggregates": "BENCH_AGGREGATES",
	"payload-bytes": "BENCH_PAYLOAD_BYTES", "partitions": "BENCH_PARTITIONS",
	"drain-budget": "BENCH_DRAIN_BUDGET", "reference-budget": "BENCH_REFERENCE_BUDGET",
	"sustained": "BENCH_SUSTAINED", "writers": "BENCH_WRITERS", "events-per-tx": "BENCH_EVENTS_PER_TX",
	"delivery-rate": "BENCH_DELIVERY_RATE", "delivery": "BENCH_DELIVERY", "peers": "BENCH_PEERS",
}

// runCommand parses run's flags (BENCH_* variables first) and runs.
func runCommand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var cfg Config
	def := cfg.withDefaults()
	fs.IntVar(&cfg.Reps, "reps", def.Reps, "interleaved repetitions")
	fs.IntVar(&cfg.Events, "events", def.Events, "events in the drained backlog")
	fs.IntVar(&cfg.Aggregates, "aggregates", def.Aggregates, "aggregates the events spread over")
	fs.IntVar(&cfg.PayloadBytes, "payload-bytes", def.PayloadBytes, "payload size")
	fs.IntVar(&cfg.Partitions, "partitions", def.Partitions, "partitions per topic")
	fs.DurationVar(&cfg.DrainBudget, "drain-budget", def.DrainBudget, "longest drain; past it the rate so far is reported as partial")
	fs.DurationVar(&cfg.ReferenceBudget, "reference-budget", def.ReferenceBudget, "the reference loop's drain budget")
	fs.DurationVar(&cfg.Sustained, "sustained", def.Sustained, "how long writers write at full speed")
	fs.IntVar(&cfg.SustainedWriters, "writers", def.SustainedWriters, "writers of the sustained runs")
	fs.IntVar(&cfg.EventsPerTx, "events-per-tx", def.EventsPerTx, "events per writer transaction")
	fs.IntVar(&cfg.DeliveryRate, "delivery-rate", def.DeliveryRate, "steady write rate of the delivery runs, events/s")
	fs.DurationVar(&cfg.Delivery, "delivery", def.Delivery, "how long the steady writer writes")
	peersFlag := fs.String("peers", "", "comma-separated peers to run (default all: "+strings.Join(peerNames(), ",")+")")
	brokers := fs.String("brokers", strings.Join(def.Brokers, ","), "Kafka seed brokers, comma-separated")
	fs.StringVar(&cfg.MySQLAddr, "mysql-addr", def.MySQLAddr, "MariaDB address (user herald/herald)")
	fs.StringVar(&cfg.Out, "out", def.Out, "directory of peers.json, peers.md and the SVG charts")
	fs.StringVar(&cfg.Herald, "herald", "", "herald binary (default: built from ../cmd/herald)")
	fs.StringVar(&cfg.Debezium, "debezium", def.Debezium, "directory of Debezium's build.sh and run.sh")
	if err := applyEnv(fs, runEnv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *peersFlag != "" {
		cfg.Peers = strings.Split(*peersFlag, ",")
	}
	cfg.Brokers = localstack.SplitBrokers(*brokers)
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
	out := fs.String("out", Config{}.withDefaults().Out, "directory of peers.md and the SVG charts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := readResults(*in)
	if err != nil {
		return err
	}
	return writeReport(*out, r)
}

// applyEnv names each flag's BENCH_* variable in its usage and sets the
// flag from the variable when it is set; the command line, parsed after,
// wins.
func applyEnv(fs *flag.FlagSet, env map[string]string) error {
	for name, variable := range env {
		f := fs.Lookup(name)
		f.Usage += " (env " + variable + ")"
		if v := os.Getenv(variable); v != "" {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("%s=%q is not a valid --%s: %w", variable, v, name, err)
			}
		}
	}
	return nil
}
