package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/herald-outbox/herald/testkit/localstack"
)

// Config is one run of the comparison. Zero fields mean the defaults; the
// command line maps flags onto it, and BENCH_* environment variables onto
// the flags' defaults.
type Config struct {
	// Reps is how many interleaved repetitions run. Defaults to 2: with
	// seven peers, three repetitions of 100,000-event drains take longer
	// than the 20 minutes a default run is allowed on the 2-core machine
	// (BENCH_REPS=3 for medians of three).
	Reps int
	// Events is the drained backlog's size. Defaults to 100,000.
	Events int
	// Aggregates is how many aggregates the events spread over. Defaults
	// to 1,000.
	Aggregates int
	// PayloadBytes is each event's payload size. Defaults to 1,024.
	PayloadBytes int
	// Partitions is each topic's partition count. Defaults to 12.
	Partitions int
	// DrainBudget bounds a drain: a peer still draining then is reported
	// with its rate so far, as partial. Defaults to 40s.
	DrainBudget time.Duration
	// ReferenceBudget bounds the reference loop's drain, which is steady
	// long before it could finish. Defaults to 15s.
	ReferenceBudget time.Duration
	// Sustained is how long writers write at full speed. Defaults to 10s.
	Sustained time.Duration
	// SustainedWriters is how many writers write at once. Defaults to 8.
	SustainedWriters int
	// EventsPerTx is how many events one writer transaction carries.
	// Defaults to 10.
	EventsPerTx int
	// DeliveryRate is the steady write rate of the delivery runs, in
	// events per second. Defaults to 1,000.
	DeliveryRate int
	// Delivery is how long the steady writers write. Defaults to 10s.
	Delivery time.Duration
	// Peers lists the peers to run, by name. Defaults to all of them.
	Peers []string
	// Brokers are the Kafka seed brokers. Defaults to 127.0.0.1:9092.
	Brokers []string
	// MySQLAddr is MariaDB's address. Defaults to 127.0.0.1:3306.
	MySQLAddr string
	// Out is the directory the JSON, Markdown and SVG files go to.
	// Defaults to ../docs/benchmarks (the repository's, from bench/).
	Out string
	// Herald is the herald binary the herald peers run. Defaults to one
	// built from ../cmd/herald into the work directory.
	Herald string
	// Self is the bench binary the harness re-executes as the reference
	// loop and the Watermill forwarder. Defaults to this executable.
	Self string
	// Debezium is the directory of Debezium's build.sh and run.sh.
	// Defaults to ./debezium.
	Debezium string
}

// ConfigError is one invalid field of a Config, named by its flag.
type ConfigError struct {
	Flag   string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("--%s: %s", e.Flag, e.Reason) }

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Reps, 2)
	def(&c.Events, 100_000)
	def(&c.Aggregates, 1_000)
	def(&c.PayloadBytes, 1024)
	def(&c.Partitions, 12)
	defDur(&c.DrainBudget, 40*time.Second)
	defDur(&c.ReferenceBudget, 15*time.Second)
	defDur(&c.Sustained, 10*time.Second)
	def(&c.SustainedWriters, 8)
	def(&c.EventsPerTx, 10)
	def(&c.DeliveryRate, 1000)
	defDur(&c.Delivery, 10*time.Second)
	if len(c.Peers) == 0 {
		c.Peers = peerNames()
	}
	if len(c.Brokers) == 0 {
		c.Brokers = []string{localstack.KafkaBrokersDefault}
	}
	if c.MySQLAddr == "" {
		c.MySQLAddr = "127.0.0.1:3306"
	}
	if c.Out == "" {
		c.Out = "../docs/benchmarks"
	}
	if c.Debezium == "" {
		c.Debezium = "debezium"
	}
	return c
}

// validate returns every invalid field at once.
func (c Config) validate() error {
	var errs []error
	positive := func(flag string, v int) {
		if v < 0 {
			errs = append(errs, &ConfigError{flag, "must be positive"})
		}
	}
	positive("reps", c.Reps)
	positive("events", c.Events)
	positive("aggregates", c.Aggregates)
	positive("partitions", c.Partitions)
	positive("writers", c.SustainedWriters)
	positive("events-per-tx", c.EventsPerTx)
	positive("delivery-rate", c.DeliveryRate)
	for flag, d := range map[string]time.Duration{"drain-budget": c.DrainBudget, "reference-budget": c.ReferenceBudget,
		"sustained": c.Sustained, "delivery": c.Delivery} {
		if d < 0 {
			errs = append(errs, &ConfigError{flag, "must be positive"})
		}
	}
	if c.PayloadBytes != 0 && c.PayloadBytes < 100 {
		errs = append(errs, &ConfigError{"payload-bytes", "must be at least 100 (the harness's fields take about 60)"})
	}
	if c.DeliveryRate != 0 && c.EventsPerTx != 0 && c.DeliveryRate%c.EventsPerTx != 0 {
		errs = append(errs, &ConfigError{"delivery-rate", fmt.Sprintf("must be a multiple of --events-per-tx (%d)", c.EventsPerTx)})
	}
	known := map[string]bool{}
	for _, n := range peerNames() {
		known[n] = true
	}
	for _, p := range c.Peers {
		if !known[p] {
			errs = append(errs, &ConfigError{"peers", fmt.Sprintf("unknown peer %q (known: %v)", p, peerNames())})
		}
	}
	return errors.Join(errs...)
}

// dsn is the herald user's DSN on database name ("" for none).
func (c Config) dsn(name string) string {
	return "herald:herald@tcp(" + c.MySQLAddr + ")/" + name + "?parseTime=true&loc=UTC"
}
