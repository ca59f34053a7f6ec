package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The planner's unit tests: candidates and predecessors as in-memory
// tables, no database.

var planNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// key parses "a#3" (aggregate a of type order, seq 3).
func key(s string) SeqKey {
	agg, seq, _ := strings.Cut(s, "#")
	var n uint64
	fmt.Sscan(seq, &n)
	return SeqKey{AggregateType: "order", AggregateID: agg, Seq: n}
}

// seqs returns "agg#1".."agg#n", then more.
func seqs(agg string, n int, more ...string) []string {
	var out []string
	for seq := 1; seq <= n; seq++ {
		out = append(out, fmt.Sprintf("%s#%d", agg, seq))
	}
	return append(out, more...)
}

func cands(keys ...string) []Candidate {
	out := make([]Candidate, len(keys))
	for i, k := range keys {
		out[i] = Candidate{ID: "id-" + k, Key: key(k)}
	}
	return out
}

// table is a fake predecessor store; it records every read.
type table struct {
	rows  map[SeqKey]Predecessor
	reads [][]SeqKey
}

func newTable(rows map[string]Predecessor) *table {
	t := &table{rows: map[SeqKey]Predecessor{}}
	for k, p := range rows {
		if p.ID == "" {
			p.ID = "id-" + k
		}
		t.rows[key(k)] = p
	}
	return t
}

func (t *table) read(keys []SeqKey) (time.Time, map[SeqKey]Predecessor, error) {
	t.reads = append(t.reads, keys)
	found := map[SeqKey]Predecessor{}
	for _, k := range keys {
		if p, ok := t.rows[k]; ok {
			found[k] = p
		}
	}
	return planNow, found, nil
}

var (
	done        = Predecessor{Done: true}
	ready       = Predecessor{NextAttempt: planNow.Add(-time.Second)}
	backingOff  = Predecessor{NextAttempt: planNow.Add(time.Hour)}
	quarantined = Predecessor{Quarantined: true, Forever: true}
	heldForever = Predecessor{Forever: true}
)

// render describes a plan: the chains leased, then each held or skipped
// candidate with why.
func render(p *plan) string {
	var parts []string
	for _, chain := range p.chains {
		var ks []string
		for _, c := range chain {
			ks = append(ks, fmt.Sprintf("%s#%d", c.Key.AggregateID, c.Key.Seq))
		}
		parts = append(parts, "lease "+strings.Join(ks, ","))
	}
	for _, c := range p.all {
		k := fmt.Sprintf("%s#%d", c.Key.AggregateID, c.Key.Seq)
		switch c.fate {
		case fateHold:
			until := "forever"
			if !c.hold.Forever {
				until = c.hold.Until.Sub(planNow).String()
			}
			parts = append(parts, fmt.Sprintf("hold %s behind %s for %s", k, strings.TrimPrefix(c.hold.Behind, "id-"), until))
		}
	}
	return strings.Join(parts, "; ")
}

func TestPlanClaim(t *testing.T) {
	tests := []struct {
		name   string
		cands  []string // as key parses them
		preds  map[string]Predecessor
		limit  int
		policy OrderPolicy
		want   string
		// reads is how many predecessor reads the plan may make.
		reads int
	}{
		{name: "first events lease without a read", cands: []string{"a#1", "b#1"}, limit: 10,
			want: "lease a#1; lease b#1", reads: 0},
		{name: "a chain leases in sequence order", cands: []string{"a#2", "a#1", "a#3"}, limit: 10,
			want: "lease a#1,a#2,a#3", reads: 0},
		{name: "done predecessor", cands: []string{"a#5"}, preds: map[string]Predecessor{"a#4": done}, limit: 10,
			want: "lease a#5", reads: 1},
		{name: "absent predecessor (published and cleaned up)", cands: []string{"a#5", "a#6"}, limit: 10,
			want: "lease a#5,a#6", reads: 1},
		{name: "backing off: hold until its retry", cands: []string{"a#5", "a#6"},
			preds: map[string]Predecessor{"a#4": backingOff}, limit: 10,
			want: "hold a#5 behind a#4 for 1h0m0s; hold a#6 behind a#4 for 1h0m0s", reads: 1},
		{name: "quarantined, hold policy: hold for ever", cands: []string{"a#5"},
			preds: map[string]Predecessor{"a#4": quarantined}, limit: 10, policy: OrderHold,
			want: "hold a#5 behind a#4 for forever", reads: 1},
		{name: "quarantined, skip-quarantined policy: lease", cands: []string{"a#5"},
			preds: map[string]Predecessor{"a#4": quarantined}, limit: 10, policy: OrderSkipQuarantined,
			want: "lease a#5", reads: 1},
		{name: "held for ever behind a quarantined event: hold with it, whatever the policy", cands: []string{"a#6"},
			preds: map[string]Predecessor{"a#5": heldForever}, limit: 10, policy: OrderSkipQuarantined,
			want: "hold a#6 behind a#5 for forever", reads: 1},
		{name: "ready predecessor outside the window is brought in as chain head", cands: []string{"a#5", "a#6"},
			preds: map[string]Predecessor{"a#4": ready, "a#3": done}, limit: 10,
			want: "lease a#4,a#5,a#6", reads: 2},
		{name: "the walk follows ready predecessors four steps back", cands: []string{"a#6"},
			preds: map[string]Predecessor{"a#5": ready, "a#4": ready, "a#3": ready, "a#2": ready, "a#1": done}, limit: 10,
			want: "lease a#2,a#3,a#4,a#5,a#6", reads: 5},
		{name: "beyond four steps the successor is held for a recheck", cands: []string{"a#7"},
			preds: map[string]Predecessor{"a#6": ready, "a#5": ready, "a#4": ready, "a#3": ready, "a#2": ready, "a#1": done},
			limit: 10, want: "hold a#7 behind a#2 for 1s; hold a#6 behind a#2 for 1s; hold a#5 behind a#2 for 1s; hold a#4 behind a#2 for 1s; hold a#3 behind a#2 for 1s",
			reads: 5},
		{name: "a brought-in head that is itself behind a backoff holds its chain", cands: []string{"a#5"},
			preds: map[string]Predecessor{"a#4": ready, "a#3": backingOff}, limit: 10,
			want: "hold a#5 behind a#3 for 1h0m0s; hold a#4 behind a#3 for 1h0m0s", reads: 2},
		{name: "limit cuts a chain at the limit", cands: []string{"a#1", "a#2", "a#3", "b#1"}, limit: 2,
			want: "lease a#1,a#2", reads: 0},
		{name: "one aggregate's chain takes at most an eighth of the limit", cands: seqs("a", 25, "b#1"), limit: 160,
			want: "lease " + strings.Join(seqs("a", 20), ",") + "; lease b#1", reads: 0},
		{name: "chains are taken in queue order until the limit", cands: []string{"b#1", "a#1", "b#2", "c#1"}, limit: 3,
			want: "lease b#1,b#2; lease a#1", reads: 0},
		{name: "holds are decided beyond the limit", cands: []string{"a#1", "b#3"},
			preds: map[string]Predecessor{"b#2": backingOff}, limit: 1,
			want: "lease a#1; hold b#3 behind b#2 for 1h0m0s", reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := newTable(tt.preds)
			policy := tt.policy
			if policy == "" {
				policy = OrderHold
			}
			p, err := planClaim(cands(tt.cands...), tt.limit, policy, tab.read)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(p); got != tt.want {
				t.Errorf("plan\n got %s\nwant %s", got, tt.want)
			}
			if len(tab.reads) > tt.reads {
				t.Errorf("%d predecessor reads (%v), want at most %d", len(tab.reads), tab.reads, tt.reads)
			}
		})
	}
}

func TestPlanReportsCutChains(t *testing.T) {
	p, err := planClaim(cands(seqs("hot", 40, "quiet#1")...), 80, OrderHold, newTable(nil).read)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := render(p), "lease "+strings.Join(seqs("hot", 16), ",")+"; lease quiet#1"; got != want {
		t.Errorf("plan %s: want hot cut at the floor of 16 (80/8 is less)", got)
	}
	if len(p.cut) != 1 || p.cut[0] != (AggregateKey{"order", "hot"}) {
		t.Errorf("cut %v, want the hot aggregate", p.cut)
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	preds := map[string]Predecessor{}
	var keys []string
	for i := range 50 {
		agg := fmt.Sprintf("g%02d", i)
		keys = append(keys, agg+"#3")
		preds[agg+"#2"] = ready
		preds[agg+"#1"] = done
	}
	first := ""
	for range 20 {
		p, err := planClaim(cands(keys...), 30, OrderHold, newTable(preds).read)
		if err != nil {
			t.Fatal(err)
		}
		got := render(p)
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("two plans of the same claim differ:\n%s\n%s", first, got)
		}
	}
}

func TestPlanReportsReadErrors(t *testing.T) {
	boom := errors.New("connection lost")
	_, err := planClaim(cands("a#2"), 10, OrderHold, func([]SeqKey) (time.Time, map[SeqKey]Predecessor, error) {
		return time.Time{}, nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the read's", err)
	}
}

func TestHoldsGroupByBlocker(t *testing.T) {
	tab := newTable(map[string]Predecessor{"a#1": backingOff, "b#1": quarantined})
	p, err := planClaim(cands("a#2", "a#3", "b#2", "b#3"), 10, OrderHold, tab.read)
	if err != nil {
		t.Fatal(err)
	}
	var behind []string
	for _, c := range p.held {
		behind = append(behind, strings.TrimPrefix(c.hold.Behind, "id-"))
	}
	slices.Sort(behind)
	if strings.Join(behind, ",") != "a#1,a#1,b#1,b#1" {
		t.Errorf("held behind %v: a successor waits for its aggregate's blocker, not its own predecessor", behind)
	}
}
