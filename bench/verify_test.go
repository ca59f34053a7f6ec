package main

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseEvent(t *testing.T) {
	raw := payload("agg-0007", 42, 300, rand.New(rand.NewPCG(1, 2)))
	if len(raw) < 290 || len(raw) > 310 {
		t.Errorf("payload of %d bytes, want about 300", len(raw))
	}
	tests := []struct {
		name  string
		value []byte
	}{
		{"raw payload (Watermill, Debezium)", raw},
		{"herald's envelope", []byte(`{"event_id":"x","type":"order.updated","version":1,"data":` + string(raw) + `}`)},
		{"a JSON string of the payload", []byte(strconv.Quote(string(raw)))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			agg, seq, ok := parseEvent(tc.value)
			if !ok || agg != "agg-0007" || seq != 42 {
				t.Errorf("parseEvent = %q, %d, %v; want agg-0007, 42, true", agg, seq, ok)
			}
		})
	}
	if _, _, ok := parseEvent([]byte(`{"order_id":1}`)); ok {
		t.Error("a payload without the harness's fields parsed")
	}
}

func TestPercentileAndSpread(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {0, 1}, {10, 1}} {
		if got := percentile(xs, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
	s := spreadOf([]float64{300, math.NaN(), 100, 200, 400})
	if s != (spread{Median: 200, Min: 100, Max: 400, N: 4}) {
		t.Errorf("spreadOf = %+v", s)
	}
	if s := spreadOf([]float64{3, 1, 2}); s.Median != 2 {
		t.Errorf("median of 3 = %v", s.Median)
	}
}

// recs builds records of one partition per aggregate from "agg:seq" items
// in topic order.
func recs(items ...string) []record {
	var out []record
	for i, it := range items {
		agg, seq, _ := strings.Cut(it, ":")
		n, _ := strconv.ParseInt(seq, 10, 64)
		part := int32(agg[len(agg)-1] - '0')
		out = append(out, record{Partition: part, Offset: int64(i), Key: agg, Agg: agg, Seq: n, Append: time.Unix(int64(i), 0)})
	}
	return out
}

func TestVerify(t *testing.T) {
	written := map[string]int64{"a1": 3, "a2": 2}
	tests := []struct {
		name     string
		records  []record
		complete bool
		check    func(Verification) bool
		ok       bool
	}{
		{"in order and complete", recs("a1:1", "a2:1", "a1:2", "a2:2", "a1:3"), true,
			func(v Verification) bool { return v.Delivered == 5 && v.Expected == 5 }, true},
		{"a duplicate is reported, not a failure", recs("a1:1", "a1:2", "a1:1", "a1:3", "a2:1", "a2:2"), true,
			func(v Verification) bool { return v.Duplicates == 1 }, true},
		{"a redelivered earlier event after a later one is not a reorder", recs("a1:1", "a1:2", "a1:3", "a1:2", "a2:1", "a2:2"), true,
			func(v Verification) bool { return v.Duplicates == 1 && v.OrderViolations == 0 }, true},
		{"reordered", recs("a1:1", "a1:3", "a1:2", "a2:1", "a2:2"), true,
			func(v Verification) bool { return v.OrderViolations == 1 && strings.Contains(v.FirstProblem, "a1") }, false},
		{"missing", recs("a1:1", "a1:3", "a2:1", "a2:2"), true,
			func(v Verification) bool { return v.Missing == 1 && strings.Contains(v.FirstProblem, "a1/2") }, false},
		{"missing is not counted when the run stopped with a backlog", recs("a1:1", "a2:1"), false,
			func(v Verification) bool { return v.Missing == 0 && v.Delivered == 2 }, true},
		{"a gap is not a reorder", recs("a1:1", "a1:3", "a2:1", "a2:2"), false,
			func(v Verification) bool { return v.OrderViolations == 0 }, true},
		{"never written", recs("a1:1", "a1:2", "a1:3", "a1:4", "a2:1", "a2:2"), true,
			func(v Verification) bool { return v.Unexpected == 1 }, false},
		{"probes are left out", append(recs("a1:1", "a1:2", "a1:3", "a2:1", "a2:2"),
			record{Partition: 3, Offset: 99, Key: "probe", Agg: probeAggregate, Seq: 1}), true,
			func(v Verification) bool { return v.Delivered == 5 }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := verify(written, tc.records, tc.complete)
			if v.OK != tc.ok || !tc.check(v) {
				t.Errorf("verify = %+v, want ok=%v", v, tc.ok)
			}
		})
	}
	t.Run("an aggregate on two partitions", func(t *testing.T) {
		r := recs("a1:1", "a1:2", "a1:3", "a2:1", "a2:2")
		r[1].Partition = 7
		v := verify(written, r, true)
		if v.OK || v.KeysSplit != 1 {
			t.Errorf("verify = %+v, want one split key", v)
		}
	})
	t.Run("a record keyed by something else", func(t *testing.T) {
		r := recs("a1:1", "a1:2", "a1:3", "a2:1", "a2:2")
		r[0].Key = ""
		if v := verify(written, r, true); v.OK || v.KeyMismatches != 1 {
			t.Errorf("verify = %+v, want one key mismatch", v)
		}
	})
	t.Run("a record without the harness's fields", func(t *testing.T) {
		r := append(recs("a1:1", "a1:2", "a1:3", "a2:1", "a2:2"), record{Partition: 1, Offset: 50})
		if v := verify(written, r, true); v.OK || v.Unparsed != 1 {
			t.Errorf("verify = %+v, want one unparsed", v)
		}
	})
}

func TestBacklogWritten(t *testing.T) {
	w := backlogWritten(2500, 1000)
	if len(w) != 1000 || w[aggName(0)] != 3 || w[aggName(499)] != 3 || w[aggName(500)] != 2 || w[aggName(999)] != 2 {
		t.Errorf("backlogWritten(2500, 1000) = %d aggregates, %v", len(w), []int64{w[aggName(0)], w[aggName(499)], w[aggName(500)], w[aggName(999)]})
	}
	var total int64
	for _, n := range w {
		total += n
	}
	if total != 2500 {
		t.Errorf("total %d", total)
	}
	e := backlogEvent(1503, 1000, 200, rand.New(rand.NewPCG(1, 1)))
	if e.Agg != aggName(503) || e.Seq != 2 {
		t.Errorf("event 1503 = %s/%d", e.Agg, e.Seq)
	}
}

func TestFirstDelays(t *testing.T) {
	base := time.Unix(1000, 0)
	r := []record{
		{Partition: 0, Offset: 0, Agg: "a", Seq: 1, Append: base.Add(5 * time.Millisecond)},
		{Partition: 0, Offset: 1, Agg: "a", Seq: 1, Append: base.Add(50 * time.Millisecond)},
		{Partition: 1, Offset: 0, Agg: "b", Seq: 1, Append: base.Add(20 * time.Millisecond)},
		{Partition: 1, Offset: 1, Agg: probeAggregate, Seq: 1, Append: base},
	}
	got := firstDelays(r, map[eventKey]time.Time{{"a", 1}: base, {"b", 1}: base.Add(10 * time.Millisecond)})
	if len(got) != 2 || got[0] != 5 || got[1] != 10 {
		t.Errorf("firstDelays = %v, want [5 10] (the duplicate's later append ignored)", got)
	}
}
