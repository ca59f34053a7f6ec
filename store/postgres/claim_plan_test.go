package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestClaimQueryWalksTheIndex: the plan of the claim's read is an index
// scan of idx_ready bounded by the claim range, with no sort, on a table
// big enough for the planner to care (with statistics, some rows
// published, some backing off): for a relay owning every bucket, and for
// relays owning half or an eighth of them, continuing after their cursor
// (past some aggregates), as several relays claim. The statement is the
// one ReadReady runs (postgres.ReadyQuery), planned for its parameters and
// as the generic plan a prepared statement may switch to. Without the
// statistics on the bucket expression (migration 00004) the planner
// underestimates an eighth of the buckets and sorts.
func TestClaimQueryWalksTheIndex(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	// A backlog of 40 batches over 1,000 aggregates, written over the last
	// 20 s (the case where a sort would cost), then some published and
	// some backing off.
	d.Exec(t, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
		payload, occurred_at, next_attempt_at)
		SELECT gen_random_uuid(), 'order', (i % 1000)::text, i / 1000 + 1, 'order.created', 1, '{}',
		       statement_timestamp() - (20000 - i) * interval '1 millisecond',
		       statement_timestamp() - (20000 - i) * interval '1 millisecond'
		FROM generate_series(0, 19999) AS i`)
	d.Exec(t, `UPDATE outbox_events SET published_at = statement_timestamp() WHERE aggregate_seq <= 2`)
	d.Exec(t, `UPDATE outbox_events SET attempts = 1, next_attempt_at = statement_timestamp() + interval '1 minute'
		WHERE aggregate_seq = 3`)
	d.Exec(t, "ANALYZE outbox_events")

	ctx := context.Background()
	_, cursor, err := (postgres.Dialect{}).ReadReady(ctx, d.DB, store.ReadyRequest{Limit: 100})
	if err != nil || cursor.ID == "" {
		t.Fatalf("read a cursor: %v (%+v)", err, cursor)
	}
	half, eighth := buckets(0, store.BucketCount/2), buckets(store.BucketCount/2, store.BucketCount/8)
	for _, tc := range []struct {
		name   string
		req    store.ReadyRequest
		cursor bool
	}{
		{"every bucket", store.ReadyRequest{Limit: 500}, false},
		{"half the buckets after a cursor", store.ReadyRequest{Limit: 500, Buckets: half, After: &cursor,
			Exclude: []store.AggregateKey{{AggregateType: "order", AggregateID: "7"}}}, true},
		{"an eighth of the buckets after a cursor", store.ReadyRequest{Limit: 500, Buckets: eighth, After: &cursor}, true},
	} {
		query, args := postgres.ReadyQuery(tc.req)
		t.Run(tc.name+"/custom plan", func(t *testing.T) {
			var raw string
			if err := d.DB.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			checkClaimPlan(t, raw, tc.cursor)
		})
		t.Run(tc.name+"/generic plan", func(t *testing.T) {
			conn, err := d.DB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
				t.Fatal(err)
			}
			defer conn.ExecContext(ctx, "RESET plan_cache_mode")
			if _, err := conn.ExecContext(ctx, "PREPARE claim AS "+query); err != nil {
				t.Fatal(err)
			}
			defer conn.ExecContext(ctx, "DEALLOCATE claim")
			var raw string
			if err := conn.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) EXECUTE claim("+literals(args)+")").Scan(&raw); err != nil {
				t.Fatal(err)
			}
			checkClaimPlan(t, raw, tc.cursor)
		})
	}
}

// checkClaimPlan fails unless the plan reads outbox_events by an Index Scan
// of idx_ready bounded by the claim range (and by the cursor when there is
// one) and sorts nothing.
func checkClaimPlan(t *testing.T, raw string, cursor bool) {
	t.Helper()
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
		t.Logf("plan node: %s on %s using %s, cond %s, filter %s, %.0f rows", n.NodeType, n.Relation, n.IndexName, n.IndexCond, n.Filter, n.Rows)
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
	if cursor && !strings.Contains(scan.IndexCond, "ROW(next_attempt_at, occurred_at, id) >") {
		t.Errorf("index condition %q: want the scan to start after the cursor", scan.IndexCond)
	}
}

// buckets lists n buckets from first on.
func buckets(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// literals renders a statement's arguments as SQL literals, for EXECUTE.
func literals(args []any) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			out[i] = fmt.Sprint(v)
		case time.Time:
			out[i] = "'" + v.Format(time.RFC3339Nano) + "'"
		case string:
			out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case []int:
			out[i] = "'{" + strings.Trim(fmt.Sprint(v), "[]") + "}'"
			out[i] = strings.ReplaceAll(out[i], " ", ",")
		case []string:
			out[i] = `'{"` + strings.Join(v, `","`) + `"}'`
		default:
			panic(fmt.Sprintf("no literal for %T", a))
		}
	}
	return strings.Join(out, ", ")
}

// planNode is one node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Filter    string     `json:"Filter"`
	Rows      float64    `json:"Plan Rows"`
	Plans     []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}
