package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSmokeEveryGoPeer runs the whole harness on the local stack with a
// tiny configuration (2,000 events, one repetition, short windows) and
// every Go peer (Debezium, a JVM, is left to `make bench`): each peer must
// run every measurement and pass every verification, and the report's
// files must be written. It measures nothing worth keeping.
//
// One exception, reported rather than failed: Watermill's MySQL subscriber
// reads by AUTO_INCREMENT offset, so with concurrent writers a row whose
// offset was handed out before a later one's commit can be skipped for
// good (ThreeDotsLabs/watermill#311 describes it for PostgreSQL); a
// Watermill peer's missing events are logged, its order is still checked.
func TestSmokeEveryGoPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: needs MariaDB and Kafka (make up)")
	}
	dir := t.TempDir()
	self := filepath.Join(dir, "bench")
	if out, err := exec.Command("go", "build", "-o", self, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the bench binary: %v: %s", err, out)
	}
	cfg := Config{Reps: 1, Events: 2000, Aggregates: 100, DrainBudget: 2 * time.Minute, ReferenceBudget: 3 * time.Second,
		Sustained: 2 * time.Second, Delivery: 2 * time.Second, DeliveryRate: 200,
		Peers: []string{"reference", "watermill", "watermill-batch1000", "herald-poll-1", "herald-poll-2", "herald-binlog"},
		Out:   dir, Self: self}.withDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"peers.json", reportMarkdown, chartThroughput, chartLatency} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	r, err := readResults(filepath.Join(dir, "peers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Baselines) != 2 {
		t.Errorf("%d writers-alone baselines, want one per table shape", len(r.Baselines))
	}
	for _, b := range r.Baselines {
		if len(b.Samples) != 1 || b.Samples[0].WrittenRate <= 0 || b.Samples[0].Error != "" {
			t.Errorf("writers alone on %s: %+v", b.Table, b.Samples)
		}
	}
	if len(r.Peers) != len(cfg.Peers) {
		t.Fatalf("%d peers in the results, want %d", len(r.Peers), len(cfg.Peers))
	}
	for _, p := range r.Peers {
		if p.Gap != "" || len(p.Drain) != 1 || len(p.Sustained) != 1 || len(p.Delivery) != 1 {
			t.Errorf("%s: gap %q, %d/%d/%d samples", p.Name, p.Gap, len(p.Drain), len(p.Sustained), len(p.Delivery))
			continue
		}
		d, s, l := p.Drain[0], p.Sustained[0], p.Delivery[0]
		watermill := p.Table == watermillTable
		if watermill && l.Verify.Missing > 0 {
			t.Logf("%s delivery: %d of %d events never reached the topic (first: %s)", p.Name, l.Verify.Missing, l.Verify.Expected, l.Verify.FirstProblem)
			v := l.Verify
			l.Verify.Missing, l.Verify.Delivered = 0, l.Events
			l.Verify.OK = v.OrderViolations == 0 && v.KeysSplit == 0 && v.KeyMismatches == 0 && v.Unparsed == 0 && v.Unexpected == 0
		}
		for kind, e := range map[string]string{"drain": d.Error, "sustained": s.Error, "delivery": l.Error} {
			if e != "" {
				t.Errorf("%s %s: %s", p.Name, kind, e)
			}
		}
		for kind, v := range map[string]Verification{"drain": d.Verify, "sustained": s.Verify, "delivery": l.Verify} {
			if !v.OK {
				t.Errorf("%s %s: verification failed: %+v", p.Name, kind, v)
			}
		}
		if d.Delivered == 0 || (!d.Partial && d.Delivered != cfg.Events) {
			t.Errorf("%s drain delivered %d of %d (partial %v)", p.Name, d.Delivered, cfg.Events, d.Partial)
		}
		if p.Name != "reference" && d.Partial {
			t.Errorf("%s did not drain %d events within %v", p.Name, cfg.Events, cfg.DrainBudget)
		}
		if !l.Verify.CompleteRequired || l.Verify.Delivered != l.Events || l.Events == 0 {
			t.Errorf("%s delivery: %d events, %+v", p.Name, l.Events, l.Verify)
		}
		if d.Relay.CPUSeconds <= 0 || d.Relay.PeakRSSBytes <= 0 {
			t.Errorf("%s drain: relay usage %+v not measured", p.Name, d.Relay)
		}
	}
}
