package drill

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestFailpointDrillsCarryTheirEvidence: every failpoint drill of the
// catalog crashes at a failpoint herald's binaries know and carries the
// evidence function that proves the crash happened in its window; a drill
// without one would pass whether or not its fault was exercised.
func TestFailpointDrillsCarryTheirEvidence(t *testing.T) {
	n := 0
	for _, d := range Catalog {
		if d.kind != faultFailpoint {
			if d.evidence != nil || d.failpoint != "" {
				t.Errorf("drill %s injects no failpoint, yet names failpoint %q or an evidence function", d.Name, d.failpoint)
			}
			continue
		}
		n++
		if !slices.Contains(failpoint.Known, d.failpoint) {
			t.Errorf("drill %s: failpoint %q is not one herald's binaries know (failpoint.Known)", d.Name, d.failpoint)
		}
		if d.evidence == nil {
			t.Errorf("drill %s: no evidence function", d.Name)
		}
		if d.target == "" || d.crashAt == nil {
			t.Errorf("drill %s: target %q, crashAt set %v", d.Name, d.target, d.crashAt != nil)
		}
	}
	if n == 0 {
		t.Fatal("the catalog has no failpoint drill")
	}
}

// TestOrderCommittedUnanswered judges the orders API's crash from its log
// and the database as orders-crash-after-commit does: the order its last
// line names must be committed and unanswered.
func TestOrderCommittedUnanswered(t *testing.T) {
	log := filepath.Join(t.TempDir(), "orders.log")
	lines := []string{
		`{"msg":"order created","order_id":6}`,
		`{"msg":"listening"}`,
		`{"msg":"order created","order_id":7}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	committed := func(ids ...int64) *Verification {
		v := &Verification{Orders: &verify.OrdersState{}}
		for _, id := range ids {
			v.Orders.Orders = append(v.Orders.Orders, verify.Order{ID: id, Status: "created"})
		}
		return v
	}
	tests := []struct {
		name     string
		answered []int64
		v        *Verification
		want     string // substring of the one failure; "" for none
	}{
		{"committed, unanswered", []int64{6}, committed(6, 7), ""},
		{"not committed", []int64{6}, committed(6), "order 7, committed before the crash, is not in the database"},
		{"answered", []int64{6, 7}, committed(6, 7), "order 7: the client got an answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &drillRun{pipeline: &pipeline{quiet: true, cfg: Config{}.withDefaults()}, rep: &DrillReport{}}
			r.loadRes.CreatedIDs = tt.answered
			judge := orderCommittedUnanswered(t.Context(), r, Exit{Log: log})
			got := judge(t.Context(), tt.v)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("failures %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("failures %q, want one saying %q", got, tt.want)
			}
		})
	}
	r := &drillRun{pipeline: &pipeline{quiet: true, cfg: Config{}.withDefaults()}, rep: &DrillReport{}}
	empty := filepath.Join(t.TempDir(), "empty.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := orderCommittedUnanswered(t.Context(), r, Exit{Log: empty})(t.Context(), committed(7)); len(got) != 1 {
		t.Errorf("a process that logged no order: failures %q, want one", got)
	}
}
