package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleResults is a run with a passing peer, one that reordered and one
// that could not run.
func sampleResults() *Results {
	ok := Verification{Expected: 100, Delivered: 100, CompleteRequired: true, OK: true}
	return &Results{
		Started: time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC), Finished: time.Date(2026, 12, 3, 14, 18, 0, 0, time.UTC),
		ElapsedSeconds: 1080,
		Machine:        Machine{CPUs: 2, MariaDB: "10.11.19-MariaDB", Kafka: "4.1.1", Brokers: 1, Go: "go1.26.8", Java: "openjdk 17", Watermill: "watermill v1.5.1", Debezium: "3.5.0.Final"},
		Settings:       Settings{Reps: 2, Events: 100, Aggregates: 10, PayloadBytes: 1024, Partitions: 12, ReplicationFactor: 1, DeliveryRate: 1000, DeliveryWriters: 4},
		Baselines: []Baseline{{Table: heraldTable, Samples: []SustainedSample{
			{Rep: 1, WrittenRate: 4000, Database: DatabaseCost{CPUSecondsPerEvent: 100e-6, BinlogBytesPerEvent: 2000}}}}},
		Peers: []PeerResult{
			{Name: "herald-poll-1", Label: "herald, polling, 1 relay", Table: heraldTable,
				Drain: []DrainSample{
					{Rep: 1, Events: 100, Delivered: 100, Rate: 8000, Database: DatabaseCost{40e-6, 4700}, Relay: Usage{2.5, 60 << 20}, Verify: ok},
					{Rep: 2, Events: 100, Delivered: 100, Rate: 9000, Database: DatabaseCost{50e-6, 4800}, Relay: Usage{2.7, 62 << 20}, Verify: ok}},
				Sustained: []SustainedSample{{Rep: 1, WrittenRate: 2000, PublishedRate: 1990, Backlog: 30,
					Database: DatabaseCost{150e-6, 6700}, Verify: Verification{OK: true}}},
				Delivery: []DeliverySample{{Rep: 1, Events: 100, WrittenRate: 990, P50: 24, P90: 40, P99: 70, Max: 130,
					CDF: []float64{1, 2, 3}, Verify: ok}}},
			{Name: "watermill", Label: "Watermill forwarder (defaults)", Table: watermillTable,
				Drain: []DrainSample{{Rep: 1, Events: 100, Delivered: 40, Partial: true, Rate: 1700,
					Database: DatabaseCost{-1, -1}, Verify: Verification{Delivered: 40, OrderViolations: 2, FirstProblem: "aggregate agg-0001: event 2 first appeared after event 3"}}},
				Delivery: []DeliverySample{{Rep: 1, Events: 100, P50: 2000, P90: 2500, P99: 3000, Max: 3100,
					Verify: Verification{Expected: 100, Delivered: 90, Missing: 10, CompleteRequired: true, FirstProblem: "10 of 100 written events are not on the topic"}}}},
			{Name: "debezium", Label: "Debezium", Table: heraldTable, Gap: "run.sh: java: command not found"},
		},
	}
}

func TestReportFromJSON(t *testing.T) {
	dir := t.TempDir()
	if err := writeResults(filepath.Join(dir, "peers.json"), sampleResults()); err != nil {
		t.Fatal(err)
	}
	r, err := readResults(filepath.Join(dir, "peers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(dir, r); err != nil {
		t.Fatal(err)
	}
	md := readFile(t, filepath.Join(dir, reportMarkdown))
	for _, want := range []string{
		"| herald, polling, 1 relay | herald outbox_events | 8000 (8000–9000) | 100 | 40 (40–50) | 4700 (4700–4800) | 2.5 (2.5–2.7) | 60 (60–62) | ok (2/2) |",
		"| Watermill forwarder (defaults) | watermill_forwarder_topic (Watermill's own) | 1700 (partial) |",
		"**FAILED**: 2 out of order",
		"| Debezium | herald outbox_events | gap |",
		"run.sh: java: command not found",
		"| herald, polling, 1 relay | 2000 | 1990 | 30 | 50 | 4700 |",
		"| herald, polling, 1 relay | 100 (990) | 24.0 | 40.0 | 70.0 | 130.0 |",
		"10.11.19-MariaDB", "3.5.0.Final", "watermill v1.5.1",
		"| Watermill forwarder (defaults) | 100 (0) | 2000.0 | 2500.0 | 3000.0 | 3100.0 | 0.0 | 0 | **FAILED**: 10 missing (0/1 ok) |",
		"Why Watermill's forwarder can lose events",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("peers.md lacks %q:\n%s", want, md)
		}
	}
	for _, name := range []string{chartThroughput, chartLatency} {
		svg := readFile(t, filepath.Join(dir, name))
		if err := wellFormed(svg); err != nil {
			t.Errorf("%s is not well-formed XML: %v", name, err)
		}
		if !strings.Contains(svg, "herald, polling, 1 relay") || !strings.Contains(svg, "Debezium") {
			t.Errorf("%s lacks a peer's label", name)
		}
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, chartThroughput)), "gap") {
		t.Error("the throughput chart does not show Debezium's gap")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wellFormed(doc string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestNiceCeilAndThousands(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{8771, 10000}, {1780, 2000}, {300, 500}, {0, 1}, {100, 100}} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands = %q", got)
	}
}

func TestConfigValidateNamesEveryFlag(t *testing.T) {
	err := Config{Reps: -1, Events: -5, DeliveryRate: 1001, EventsPerTx: 10, Peers: []string{"kafka-connect"}, PayloadBytes: 50}.validate()
	for _, flag := range []string{"--reps", "--events", "--delivery-rate", "--peers", "--payload-bytes"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("validate() = %v, want it to name %s", err, flag)
		}
	}
	if err := (Config{}).withDefaults().validate(); err != nil {
		t.Errorf("the defaults are invalid: %v", err)
	}
}
