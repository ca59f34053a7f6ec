package verify

import (
	"fmt"
	"strings"
	"testing"
)

// topic builds records: each entry is "eventID@partition" in offset order
// per partition; the key is looked up in keys (event id -> aggregate id).
func topic(keys map[string]string, entries ...string) []Record {
	next := map[int32]int64{}
	var out []Record
	for _, e := range entries {
		id, part, _ := strings.Cut(e, "@")
		var p int32
		fmt.Sscan(part, &p)
		out = append(out, Record{
			Topic: "t", Position: Position{p, next[p]}, Key: keys[id], HasKey: true,
			HeaderEventID: id, PayloadEventID: id, Headers: map[string]string{HeaderEventID: id},
		})
		next[p]++
	}
	return out
}

// fixture: aggregate A has a1..a3, aggregate B has b1..b2; r1 rolled back.
func fixture() ([]Event, map[string]string) {
	events := []Event{
		{"a1", "order", "A", 1}, {"a2", "order", "A", 2}, {"a3", "order", "A", 3},
		{"b1", "order", "B", 1}, {"b2", "order", "B", 2},
	}
	keys := map[string]string{"r1": "A", "x1": "A"}
	for _, e := range events {
		keys[e.ID] = e.AggregateID
	}
	return events, keys
}

func TestCheck(t *testing.T) {
	events, keys := fixture()
	tests := []struct {
		name    string
		records []Record
		// want checks the report; ok is what OK() must say.
		ok   bool
		want func(t *testing.T, r *Report)
	}{
		{
			name:    "clean, interleaved aggregates on two partitions",
			records: topic(keys, "a1@0", "b1@1", "a2@0", "b2@1", "a3@0"),
			ok:      true,
			want: func(t *testing.T, r *Report) {
				if r.Duplicates != 0 {
					t.Errorf("duplicates %d, want 0", r.Duplicates)
				}
			},
		},
		{
			name:    "lost event",
			records: topic(keys, "a1@0", "a3@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.Missing) != 1 || r.Missing[0].ID != "a2" {
					t.Errorf("missing %v, want [a2]", r.Missing)
				}
				if len(r.OrderViolations) != 0 {
					t.Errorf("a gap is not an order violation: %v", r.OrderViolations)
				}
			},
		},
		{
			name:    "ghost of a rolled-back transaction",
			records: topic(keys, "a1@0", "a2@0", "r1@0", "a3@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.Ghosts) != 1 || r.Ghosts[0].EventID() != "r1" {
					t.Errorf("ghosts %v, want [r1]", r.Ghosts)
				}
			},
		},
		{
			name:    "duplicate is counted, not a failure",
			records: topic(keys, "a1@0", "a2@0", "a1@0", "a3@0", "a2@0", "a1@0", "b1@1", "b2@1"),
			ok:      true,
			want: func(t *testing.T, r *Report) {
				if r.Duplicates != 3 || r.DuplicatedEvents != 2 {
					t.Errorf("duplicates %d over %d events, want 3 over 2", r.Duplicates, r.DuplicatedEvents)
				}
				if r.Copies["a1"] != 3 {
					t.Errorf("copies of a1: %d, want 3", r.Copies["a1"])
				}
			},
		},
		{
			name: "late duplicate of an earlier event does not hide the order of first copies",
			// a2's first copy comes before a1's first copy: the later copy of
			// a1 (offset 2) must not be taken as a1's position.
			records: topic(keys, "a2@0", "a1@0", "a1@0", "a3@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.OrderViolations) != 1 {
					t.Fatalf("order violations %v, want one", r.OrderViolations)
				}
				v := r.OrderViolations[0]
				if v.Earlier.ID != "a1" || v.Later.ID != "a2" || v.EarlierPos.Offset != 1 || v.LaterPos.Offset != 0 {
					t.Errorf("violation %v, want a1 first at 0@1 after a2 at 0@0", v)
				}
			},
		},
		{
			name:    "out-of-order pair",
			records: topic(keys, "a1@0", "a3@0", "a2@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.OrderViolations) != 1 || r.OrderViolations[0].Earlier.ID != "a2" || r.OrderViolations[0].Later.ID != "a3" {
					t.Errorf("order violations %v, want a2/a3", r.OrderViolations)
				}
			},
		},
		{
			name:    "aggregate split across partitions",
			records: topic(keys, "a1@0", "a2@2", "a3@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.SplitAggregates) != 1 || r.SplitAggregates[0].Aggregate.ID != "A" ||
					fmt.Sprint(r.SplitAggregates[0].Partitions) != "[0 2]" {
					t.Errorf("split %v, want A on [0 2]", r.SplitAggregates)
				}
			},
		},
		{
			name:    "duplicate on another partition splits the aggregate too",
			records: topic(keys, "a1@0", "a2@0", "a3@0", "a3@1", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.SplitAggregates) != 1 {
					t.Errorf("split %v, want A", r.SplitAggregates)
				}
			},
		},
		{
			name:    "stranger",
			records: topic(keys, "a1@0", "a2@0", "a3@0", "x1@0", "b1@1", "b2@1"),
			want: func(t *testing.T, r *Report) {
				if len(r.Strangers) != 1 || r.Strangers[0].EventID() != "x1" {
					t.Errorf("strangers %v, want [x1]", r.Strangers)
				}
			},
		},
		{
			name: "wrong key",
			records: func() []Record {
				rs := topic(keys, "a1@0", "a2@0", "a3@0", "b1@1", "b2@1")
				rs[1].Key = "B"
				return rs
			}(),
			want: func(t *testing.T, r *Report) {
				if len(r.Malformed) != 1 || !strings.Contains(r.Malformed[0].Reason, "key") {
					t.Errorf("malformed %v, want a2's key", r.Malformed)
				}
			},
		},
		{
			name: "header and envelope disagree",
			records: func() []Record {
				rs := topic(keys, "a1@0", "a2@0", "a3@0", "b1@1", "b2@1")
				rs[2].PayloadEventID = "a1"
				return rs
			}(),
			want: func(t *testing.T, r *Report) {
				if len(r.Malformed) != 1 {
					t.Errorf("malformed %v, want a3's", r.Malformed)
				}
			},
		},
		{
			name: "no event id at all",
			records: func() []Record {
				rs := topic(keys, "a1@0", "a2@0", "a3@0", "b1@1", "b2@1")
				rs = append(rs, Record{Position: Position{0, 3}})
				return rs
			}(),
			want: func(t *testing.T, r *Report) {
				if len(r.Malformed) != 1 {
					t.Errorf("malformed %v, want the id-less record", r.Malformed)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{Committed: events, RolledBack: []string{"r1"}, Records: tt.records})
			if r.OK() != tt.ok {
				t.Errorf("OK() = %v, want %v\n%s", r.OK(), tt.ok, r)
			}
			if !tt.ok && len(r.Problems(5)) == 0 {
				t.Errorf("a failing report lists no problems:\n%s", r)
			}
			tt.want(t, r)
		})
	}
}

func TestParseKcat(t *testing.T) {
	// Two lines as kcat 1.7 prints them with -J (the second has no key and
	// no headers, and a payload that is not an envelope).
	out := `{"topic":"t","partition":3,"offset":17,"tstype":"create","ts":1796207704741,"broker":3,"headers":["herald-event-id","e-1","x","y","x","z"],"key":"agg-1","payload":"{\"event_id\":\"e-1\",\"type\":\"order.created\",\"data\":{\"a\":\"b\\\"c\"}}"}
{"topic":"t","partition":0,"offset":0,"tstype":"create","ts":1796207704741,"broker":1,"key":null,"payload":"not json"}
`
	recs, err := ParseKcat(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("parsed %d records, want 2", len(recs))
	}
	r := recs[0]
	if r.Partition != 3 || r.Offset != 17 || r.Key != "agg-1" || !r.HasKey || r.HeaderEventID != "e-1" ||
		r.PayloadEventID != "e-1" || r.Headers["x"] != "y" {
		t.Errorf("record 0 = %+v", r)
	}
	if r := recs[1]; r.HasKey || r.EventID() != "" {
		t.Errorf("record 1 = %+v, want no key and no event id", r)
	}
	if _, err := ParseKcat(strings.NewReader("{broken\n")); err == nil {
		t.Error("ParseKcat accepted a broken line")
	}
}
