package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store/postgres"
)

// TestClaimQueryWalksTheIndex: the plan of the claim query is an index
// scan of idx_ready bounded by the claim range, with no sort, on a table
// big enough for the planner to care (with statistics, some rows
// published, some leased).
func TestClaimQueryWalksTheIndex(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	aggs := make([]string, 5000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 300)
	}
	d.AddEvents(t, testenv.OrderEvents(aggs...)...)
	d.Exec(t, `UPDATE outbox_events SET published_at = statement_timestamp() WHERE aggregate_seq <= 10`)
	d.Exec(t, `UPDATE outbox_events SET locked_by = 'r', next_attempt_at = statement_timestamp() + interval '1 minute'
		WHERE aggregate_seq = 11`)
	d.Exec(t, "ANALYZE outbox_events")

	var raw string
	if err := d.DB.QueryRow("EXPLAIN (FORMAT JSON) "+postgres.ClaimQuery, 500).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	var nodes []planNode
	plans[0].Plan.walk(func(n planNode) { nodes = append(nodes, n) })
	var scan *planNode
	for i, n := range nodes {
		t.Logf("plan node: %s on %s using %s, cond %s", n.NodeType, n.Relation, n.IndexName, n.IndexCond)
		if strings.Contains(n.NodeType, "Sort") {
			t.Errorf("claim query sorts: %s node", n.NodeType)
		}
		if n.Relation == "outbox_events" {
			scan = &nodes[i]
		}
	}
	if scan == nil || scan.NodeType != "Index Scan" || scan.IndexName != "idx_ready" {
		t.Fatalf("claim query reads outbox_events by %+v, want an Index Scan of idx_ready", scan)
	}
	if !strings.Contains(scan.IndexCond, "published_at IS NULL") || !strings.Contains(scan.IndexCond, "next_attempt_at <= statement_timestamp()") {
		t.Errorf("index condition %q: want the scan bounded by published_at IS NULL and next_attempt_at <= statement_timestamp()", scan.IndexCond)
	}
}

// planNode is one node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}
