package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

func claim(t *testing.T, st *mysql.Store, relayID string, limit int, lease time.Duration) store.Claim {
	t.Helper()
	c, err := st.Claim(context.Background(), store.ClaimRequest{RelayID: relayID, Limit: limit, Lease: lease, Policy: store.OrderHold})
	if err != nil {
		t.Fatalf("claim by %s: %v", relayID, err)
	}
	return c
}

func ids(events []store.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

type row struct {
	lockedBy    sql.NullString
	attempts    int
	published   bool
	quarantined bool
	errorClass  sql.NullString
	lastError   sql.NullString
	nextAttempt time.Time
}

func readRow(t *testing.T, db *sql.DB, id string) row {
	t.Helper()
	var r row
	err := db.QueryRow(`SELECT locked_by, attempts, published_at IS NOT NULL, quarantined_at IS NOT NULL,
		error_class, last_error, next_attempt_at FROM outbox_events WHERE id = ?`, id).
		Scan(&r.lockedBy, &r.attempts, &r.published, &r.quarantined, &r.errorClass, &r.lastError, &r.nextAttempt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dbNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var now time.Time
	if err := db.QueryRow("SELECT NOW(6)").Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

func TestClaimLeasesAndHidesRows(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("1", "2", "3")...)

	a := claim(t, st, "relay-a", 100, time.Minute)
	if len(a.Events) != 3 {
		t.Fatalf("relay-a claimed %d events, want 3", len(a.Events))
	}
	if b := claim(t, st, "relay-b", 100, time.Minute); len(b.Events) != 0 || b.Held != 0 {
		t.Fatalf("relay-b claimed %d (held %d) events under relay-a's live lease, want none", len(b.Events), b.Held)
	}
	now := dbNow(t, d.DB)
	for _, id := range added {
		r := readRow(t, d.DB, id)
		if r.lockedBy.String != "relay-a" || r.attempts != 1 {
			t.Errorf("event %s: locked_by %q attempts %d, want relay-a and 1", id, r.lockedBy.String, r.attempts)
		}
		if exp := r.nextAttempt.Sub(now); exp < 50*time.Second || exp > time.Minute {
			t.Errorf("event %s: lease ends in %v, want about a minute (database clock)", id, exp)
		}
	}
	if a.Events[0].Attempts != 1 {
		t.Errorf("claimed event reports attempts %d, want 1", a.Events[0].Attempts)
	}
}

func TestClaimHoldsLaterEventsOfAnAggregate(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("x", "x", "x", "y")...)

	a := claim(t, st, "relay-a", 1, time.Minute) // takes x#1 only
	if got := ids(a.Events); len(got) != 1 || got[0] != added[0] {
		t.Fatalf("relay-a claimed %v, want x#1 %s", got, added[0])
	}
	b := claim(t, st, "relay-b", 100, time.Minute)
	if got := ids(b.Events); len(got) != 1 || got[0] != added[3] {
		t.Fatalf("relay-b claimed %v, want only y#1 (x#2 and x#3 wait for x#1)", got)
	}
	// x#1 is in flight with relay-a: x#2 and x#3 are passed over, untouched.
	if b.Skipped != 2 || b.Held != 0 {
		t.Errorf("relay-b skipped %d and held %d events, want 2 skipped, 0 held", b.Skipped, b.Held)
	}
	for _, id := range added[1:3] {
		r := readRow(t, d.DB, id)
		if r.lockedBy.Valid || r.errorClass.Valid || r.attempts != 0 {
			t.Errorf("skipped event %s was changed: locked_by %v class %v attempts %d", id, r.lockedBy, r.errorClass, r.attempts)
		}
	}
	res, err := st.Settle(context.Background(), a.Lease, store.Outcome{Published: ids(a.Events)}, store.OrderHold)
	if err != nil || res.Published != 1 {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	// Once x#1 is published, x#2 and x#3 come at once, as one chain.
	c := claim(t, st, "relay-b", 100, time.Minute)
	if got := ids(c.Events); strings.Join(got, ",") != strings.Join(added[1:3], ",") {
		t.Fatalf("after x#1 was published relay-b claimed %v, want x#2, x#3 in order", got)
	}
}

func TestExpiredLeaseIsTakenOverAndFenced(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	testenv.AddEvents(t, d.DB, testenv.OrderEvents("1", "2")...)

	a := claim(t, st, "relay-a", 100, time.Second)
	var b store.Claim
	deadline := time.Now().Add(10 * time.Second)
	for len(b.Events) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("relay-b never took over the expired lease")
		}
		b = claim(t, st, "relay-b", 100, time.Minute)
	}
	if b.Steals != 2 {
		t.Errorf("relay-b reports %d steals, want 2", b.Steals)
	}
	// relay-a, late, tries to mark its (lost) rows published: fenced off.
	res, err := st.Settle(context.Background(), a.Lease, store.Outcome{Published: ids(a.Events)}, store.OrderHold)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published != 0 || res.LostLeases != 2 {
		t.Fatalf("stale settle: published %d, lost %d; want 0 and 2", res.Published, res.LostLeases)
	}
	res, err = st.Settle(context.Background(), b.Lease, store.Outcome{Published: ids(b.Events)}, store.OrderHold)
	if err != nil || res.Published != 2 {
		t.Fatalf("owner's settle: %+v, %v", res, err)
	}
}

func TestFailureBacksOffQuarantinesAndScrubs(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p", "p", "q")...)
	ctx := context.Background()

	a := claim(t, st, "relay-a", 100, time.Minute)
	if len(a.Events) != 3 {
		t.Fatalf("claimed %d, want 3", len(a.Events))
	}
	secretMsg := "dial herald:hunter2@tcp(db:3306)/x failed; sasl_password=kafka-secret " + strings.Repeat("x", 1200)
	out := store.Outcome{
		Failed: []store.Failure{
			{EventID: added[0], Class: "too_large", Message: secretMsg, Quarantine: true},
			{EventID: added[2], Class: "timeout", Message: "i/o timeout", RetryAfter: time.Hour},
		},
		Unsent: []store.Unsent{{EventID: added[1], Behind: added[0]}},
	}
	res, err := st.Settle(ctx, a.Lease, out, store.OrderHold)
	if err != nil {
		t.Fatal(err)
	}
	if res.Quarantined != 1 || res.LostLeases != 0 {
		t.Errorf("settle: %+v", res)
	}
	now := dbNow(t, d.DB)

	q := readRow(t, d.DB, added[0])
	if !q.quarantined || !q.nextAttempt.Equal(store.Never) || q.lockedBy.Valid || q.errorClass.String != "too_large" {
		t.Errorf("quarantined row: %+v", q)
	}
	if strings.Contains(q.lastError.String, "hunter2") || strings.Contains(q.lastError.String, "kafka-secret") {
		t.Errorf("last_error keeps a secret: %q", q.lastError.String[:120])
	}
	if n := len([]rune(q.lastError.String)); n > mysql.LastErrorMaxLen {
		t.Errorf("last_error has %d characters, want at most %d", n, mysql.LastErrorMaxLen)
	}

	held := readRow(t, d.DB, added[1])
	if held.attempts != 0 || !held.nextAttempt.Equal(store.Never) || held.errorClass.String != mysql.ErrorClassHeld {
		t.Errorf("event behind a quarantined one: %+v; want attempts 0, parked at Never, class held", held)
	}

	retry := readRow(t, d.DB, added[2])
	if wait := retry.nextAttempt.Sub(now); wait < 59*time.Minute || wait > time.Hour {
		t.Errorf("backing-off row retries in %v, want about an hour", wait)
	}
	if retry.lockedBy.Valid || retry.attempts != 1 || retry.errorClass.String != "timeout" {
		t.Errorf("backing-off row: %+v", retry)
	}
	if c := claim(t, st, "relay-b", 100, time.Minute); len(c.Events)+c.Held != 0 {
		t.Errorf("claimed %d (held %d) while everything is quarantined, held or backing off", len(c.Events), c.Held)
	}
}

func TestSkipQuarantinedPolicyLetsSuccessorsPass(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p")...)
	ctx := context.Background()
	a := claim(t, st, "relay-a", 100, time.Minute)
	if _, err := st.Settle(ctx, a.Lease, store.Outcome{Failed: []store.Failure{
		{EventID: added[0], Class: "too_large", Message: "too large", Quarantine: true}}}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	next := testenv.AddEvents(t, d.DB, testenv.OrderEvents("p")...)
	hold := claim(t, st, "relay-a", 100, time.Minute)
	if len(hold.Events) != 0 || hold.Held != 1 {
		t.Fatalf("hold policy: claimed %d held %d, want 0 and 1", len(hold.Events), hold.Held)
	}
	// Make it claimable again and retry with the other policy.
	if _, err := d.DB.Exec("UPDATE outbox_events SET next_attempt_at = NOW(6) WHERE id = ?", next[0]); err != nil {
		t.Fatal(err)
	}
	skip, err := st.Claim(ctx, store.ClaimRequest{RelayID: "relay-a", Limit: 100, Lease: time.Minute, Policy: store.OrderSkipQuarantined})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(skip.Events); len(got) != 1 || got[0] != next[0] {
		t.Fatalf("skip-quarantined policy claimed %v, want %s", got, next[0])
	}
}

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
	rows, err := d.DB.Query("EXPLAIN "+mysql.ClaimQuery, 500)
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

// TestConcurrentClaimsNeverShareAndKeepOrder: four claimers drain 2,000
// events of 40 aggregates, settling each batch as published. No event is
// leased twice, and inside every aggregate events are settled in sequence
// order.
func TestConcurrentClaimsNeverShareAndKeepOrder(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	aggs := make([]string, 2000)
	for i := range aggs {
		aggs[i] = fmt.Sprint(i % 40)
	}
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents(aggs...)...)
	ctx := context.Background()

	var (
		mu        sync.Mutex
		leasedBy  = map[string]string{}
		published []store.Event
	)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			relayID := fmt.Sprintf("relay-%d", r)
			deadline := time.Now().Add(2 * time.Minute)
			tick := time.NewTicker(20 * time.Millisecond) // the rest is leased or held: poll again
			defer tick.Stop()
			for {
				mu.Lock()
				done := len(published) == len(added)
				mu.Unlock()
				if done {
					return
				}
				if time.Now().After(deadline) {
					errs <- fmt.Errorf("%s: not drained in 2 minutes", relayID)
					return
				}
				c, err := st.Claim(ctx, store.ClaimRequest{RelayID: relayID, Limit: 50, Lease: time.Minute, Policy: store.OrderHold})
				if err != nil {
					errs <- err
					return
				}
				if len(c.Events) == 0 {
					<-tick.C
					continue
				}
				mu.Lock()
				for _, e := range c.Events {
					if prev, dup := leasedBy[e.ID]; dup {
						errs <- fmt.Errorf("event %s leased by %s and %s", e.ID, prev, relayID)
					}
					leasedBy[e.ID] = relayID
				}
				// Settled under the lock so the recorded order is the
				// publication order.
				res, err := st.Settle(ctx, c.Lease, store.Outcome{Published: ids(c.Events)}, store.OrderHold)
				if err == nil && res.Published != len(c.Events) {
					err = fmt.Errorf("settle marked %d of %d", res.Published, len(c.Events))
				}
				published = append(published, c.Events...)
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(published) != len(added) {
		t.Fatalf("published %d of %d events", len(published), len(added))
	}
	last := map[string]uint64{}
	for _, e := range published {
		if e.AggregateSeq != last[e.AggregateID]+1 {
			t.Fatalf("aggregate %s: #%d published after #%d", e.AggregateID, e.AggregateSeq, last[e.AggregateID])
		}
		last[e.AggregateID] = e.AggregateSeq
	}
}

// TestExpiredLeaseBehindItsSuccessorsIsReclaimed: a relay dies holding an
// aggregate's second event. Its lease ends after the later events'
// next_attempt_at, so they fill every claim window ahead of it; the claim
// must still bring the orphaned event in (as a chain head), not pass over
// its successors for ever.
func TestExpiredLeaseBehindItsSuccessorsIsReclaimed(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	st := mysql.NewStore(d.DB)
	ctx := context.Background()
	added := testenv.AddEvents(t, d.DB, testenv.OrderEvents("a", "a", "a", "a", "a", "a", "a", "a")...)

	first := claim(t, st, "relay-a", 1, time.Minute)
	if _, err := st.Settle(ctx, first.Lease, store.Outcome{Published: ids(first.Events)}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	dead := claim(t, st, "relay-dead", 1, time.Second) // a#2, never settled
	if got := ids(dead.Events); len(got) != 1 || got[0] != added[1] {
		t.Fatalf("the doomed relay claimed %v, want a#2", got)
	}
	if live := claim(t, st, "relay-b", 2, time.Minute); len(live.Events) != 0 || live.Skipped == 0 {
		t.Fatalf("under a#2's live lease relay-b claimed %v (skipped %d), want nothing", ids(live.Events), live.Skipped)
	}
	var c store.Claim
	testenv.Eventually(t, 10*time.Second, "the expired lease's event claimed again", func() bool {
		c = claim(t, st, "relay-b", 2, time.Minute) // a window of 4 rows: a#3..a#6
		return len(c.Events) > 0
	})
	if got := strings.Join(ids(c.Events), ","); got != added[1]+","+added[2] || c.Steals != 1 {
		t.Fatalf("claimed %v (steals %d), want a#2 (taken over) then a#3", ids(c.Events), c.Steals)
	}
}
