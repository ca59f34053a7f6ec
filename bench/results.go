package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Results is everything one run measured: the JSON the report is made from.
type Results struct {
	Started        time.Time `json:"started"`
	Finished       time.Time `json:"finished"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	Machine        Machine   `json:"machine"`
	Settings       Settings  `json:"settings"`
	// Baselines are the writers alone (no relay) per table shape: what the
	// sustained runs' database costs are relative to.
	Baselines []Baseline   `json:"baselines"`
	Peers     []PeerResult `json:"peers"`
	// Notes are facts of the run the table needs beside it.
	Notes []string `json:"notes,omitempty"`
}

// Machine is where the run happened.
type Machine struct {
	CPUs      int        `json:"cpus"`
	LoadStart [3]float64 `json:"load_start"`
	LoadEnd   [3]float64 `json:"load_end"`
	Kernel    string     `json:"kernel"`
	// Versions of the servers and tools, as each reported itself.
	MariaDB   string `json:"mariadb"`
	Kafka     string `json:"kafka"`
	Brokers   int    `json:"brokers"`
	Go        string `json:"go"`
	Java      string `json:"java"`
	Watermill string `json:"watermill"`
	Debezium  string `json:"debezium"`
	Herald    string `json:"herald"`
}

// Settings is how the run was configured.
type Settings struct {
	Reps                   int     `json:"reps"`
	Events                 int     `json:"events"`
	Aggregates             int     `json:"aggregates"`
	PayloadBytes           int     `json:"payload_bytes"`
	Partitions             int     `json:"partitions"`
	ReplicationFactor      int     `json:"replication_factor"`
	DrainBudgetSeconds     float64 `json:"drain_budget_seconds"`
	ReferenceBudgetSeconds float64 `json:"reference_budget_seconds"`
	SustainedSeconds       float64 `json:"sustained_seconds"`
	SustainedWriters       int     `json:"sustained_writers"`
	EventsPerTx            int     `json:"events_per_tx"`
	DeliveryRate           int     `json:"delivery_rate"`
	DeliveryWriters        int     `json:"delivery_writers"`
	DeliverySeconds        float64 `json:"delivery_seconds"`
	Order                  string  `json:"order"`
}

// Baseline is one repetition set of the writers alone at full speed.
type Baseline struct {
	Table   string            `json:"table"`
	Samples []SustainedSample `json:"samples"`
}

// PeerResult is one peer's samples, repetition by repetition.
type PeerResult struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Description string `json:"description"`
	// Table is the outbox table shape it reads: herald's outbox_events or
	// Watermill's own.
	Table string `json:"table"`
	// Gap, when set, is why the peer could not run at all: the exact error.
	Gap       string            `json:"gap,omitempty"`
	Drain     []DrainSample     `json:"drain"`
	Sustained []SustainedSample `json:"sustained"`
	Delivery  []DeliverySample  `json:"delivery"`
}

// Usage is what a peer's relay processes used over a measurement: CPU
// seconds (utime + stime from /proc/<pid>/stat) summed over its processes
// and peak RSS (VmHWM from /proc/<pid>/status) summed over them.
type Usage struct {
	CPUSeconds   float64 `json:"cpu_seconds"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

// DatabaseCost is the database's work over a measurement: mariadbd's CPU
// seconds and ROW binlog bytes, per event; -1 when unreadable.
type DatabaseCost struct {
	CPUSecondsPerEvent  float64 `json:"cpu_seconds_per_event"`
	BinlogBytesPerEvent float64 `json:"binlog_bytes_per_event"`
}

// DrainSample is one drain of the backlog.
type DrainSample struct {
	Rep int `json:"rep"`
	// Events is the backlog's size; Delivered how many reached the topic
	// before the drain finished or its budget ran out (Partial).
	Events    int     `json:"events"`
	Delivered int     `json:"delivered"`
	Partial   bool    `json:"partial"`
	Seconds   float64 `json:"seconds"`
	// Rate is Delivered / Seconds: from the relay's start to the last
	// event on the topic (or the budget's end).
	Rate     float64      `json:"events_per_second"`
	Database DatabaseCost `json:"database"`
	Relay    Usage        `json:"relay"`
	Verify   Verification `json:"verify"`
	Error    string       `json:"error,omitempty"`
}

// SustainedSample is one window of writers at full speed.
type SustainedSample struct {
	Rep       int     `json:"rep"`
	Seconds   float64 `json:"seconds"`
	Written   int     `json:"written"`
	Published int     `json:"published"`
	// WrittenRate and PublishedRate are per second over the window;
	// Backlog is written minus published at its end.
	WrittenRate   float64      `json:"written_per_second"`
	PublishedRate float64      `json:"published_per_second"`
	Backlog       int          `json:"backlog"`
	Database      DatabaseCost `json:"database"`
	Relay         Usage        `json:"relay"`
	Verify        Verification `json:"verify"`
	Error         string       `json:"error,omitempty"`
}

// DeliverySample is one run at a steady write rate.
type DeliverySample struct {
	Rep    int `json:"rep"`
	Events int `json:"events"`
	// Behind says the peer was still publishing when the wait after the
	// writes ended: it fell behind the rate, and its delays are those of
	// the events that arrived (completeness not checked).
	Behind bool `json:"behind"`
	// WrittenRate is the rate the writers achieved (events/s).
	WrittenRate float64 `json:"written_per_second"`
	// Delays (ms) from the writer's clock right after COMMIT returned to
	// the record's LogAppendTime, first appearance of each event.
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// CDF is the delay (ms) at each of cdfPoints, for the chart.
	CDF      []float64    `json:"cdf_ms"`
	Database DatabaseCost `json:"database"`
	Relay    Usage        `json:"relay"`
	Verify   Verification `json:"verify"`
	Error    string       `json:"error,omitempty"`
}

// cdfPoints are the percentiles a delivery sample keeps for its chart.
var cdfPoints = []float64{1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100}

func writeResults(path string, r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
