package metrics_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// documented reads docs/metrics.md: metric name -> label names.
func documented(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `(herald_[a-z_]+)` \\| [a-z]+ \\| ([^|]*)\\|")
	label := regexp.MustCompile("`([a-z_]+)`")
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var labels []string
		for _, l := range label.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, l[1])
		}
		slices.Sort(labels)
		out[m[1]] = labels
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md lists no metric")
	}
	return out
}

type fixedBacklog struct{}

func (fixedBacklog) ReadBacklog(context.Context) (store.Backlog, error) {
	return store.Backlog{Ready: 1, OldestReadyAge: time.Second}, nil
}

// ReplicationSlots gives the slots' gauges a slot to show.
func (fixedBacklog) ReplicationSlots(context.Context) ([]store.ReplicationSlot, bool, error) {
	return []store.ReplicationSlot{{Name: "herald_app", Active: true, RetainedBytes: 1 << 20, SafeWALBytes: -1,
		WALStatus: "reserved"}}, true, nil
}

// TestDocumentedMetricsAreExported: every series docs/metrics.md lists is
// exported with exactly the documented labels, and nothing undocumented is.
func TestDocumentedMetricsAreExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	relay := metrics.NewRelay(reg)
	relay.Claimed(store.Claim{Events: make([]store.Event, 3), Held: 1, Duration: time.Millisecond})
	relay.Rebalanced(store.Rebalance{Ownership: store.Ownership{Buckets: map[int]uint64{0: 1}}, TakenOver: 1})
	relay.Streamed(3, 1, 1024, 0.5)
	relay.Checkpointed(time.Now())
	relay.Delivered("stream", time.Millisecond)
	relay.Published("orders.v1", 4, 3)
	relay.PublishedBatch(time.Millisecond, 3)
	relay.Failed("timeout", false)
	relay.Settled(store.Settled{Published: 3})
	relay.Started("poll")
	relay.Swept(true, 3)
	cleanup := metrics.NewCleanup(reg)
	cleanup.CleanedUp(store.CleanupReport{Events: 3}, nil)
	backlog := metrics.NewBacklog(reg, fixedBacklog{}, time.Hour, nil)
	metrics.SampleBacklog(context.Background(), backlog)
	checkDocumented(t, reg, "herald_relay_", "herald_outbox_", "herald_cleanup_", "herald_stream_")
}

// checkDocumented compares the series of reg whose names start with one of
// prefixes with docs/metrics.md, both ways.
func checkDocumented(t *testing.T, reg *prometheus.Registry, prefixes ...string) {
	t.Helper()
	want := documented(t)
	ours := func(name string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range families {
		var labels []string
		if ms := f.GetMetric(); len(ms) > 0 {
			for _, lp := range ms[0].GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		slices.Sort(labels)
		got[f.GetName()] = labels
	}
	for name, labels := range want {
		if !ours(name) {
			continue
		}
		gl, ok := got[name]
		if !ok {
			t.Errorf("%s is documented but not exported", name)
			continue
		}
		if !slices.Equal(gl, labels) {
			t.Errorf("%s has labels %v, docs/metrics.md says %v", name, gl, labels)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && ours(name) {
			t.Errorf("%s is exported but not in docs/metrics.md", name)
		}
	}
}
