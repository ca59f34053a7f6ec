package mysql_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestClaimQueryWalksTheIndex: EXPLAIN of the claim query shows idx_ready
// and no filesort, on a table big enough for the optimizer to care.
func TestClaimQueryWalksTheIndex(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	aggs := make([]string, 2000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 300)
	}
	testenv.AddEvents(t, d.DB, testenv.OrderEvents(aggs...)...)
	if _, err := d.DB.Exec("ANALYZE TABLE outbox_events"); err != nil {
		t.Fatal(err)
	}
	// With a bucket filter, as two relays claim.
	rows, err := d.DB.Query("EXPLAIN "+fmt.Sprintf(mysql.ClaimQuery, " AND "+mysql.BucketExpr+" IN (0, 1, 2)"), 500)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	n := 0
	for rows.Next() {
		n++
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		plan := map[string]string{}
		for i, c := range cols {
			plan[c] = vals[i].String
		}
		t.Logf("plan: %v", plan)
		if plan["key"] != "idx_ready" {
			t.Errorf("claim query uses key %q, want idx_ready", plan["key"])
		}
		if strings.Contains(strings.ToLower(plan["Extra"]), "filesort") {
			t.Errorf("claim query sorts: %s", plan["Extra"])
		}
	}
	if n == 0 {
		t.Fatal("EXPLAIN returned no plan")
	}
}
