package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// The benchmark's outbox: 1,000,000 events of 100,000 aggregates (10
// each) added over 30 days, 10,000 of them quarantined (the last event of
// 10,000 aggregates), the rest published; 2,000 audit records and 20
// replays.
const (
	benchEvents      = 1_000_000
	benchPerAgg      = 10
	benchQuarantined = 10_000
	benchSpan        = 30 * 24 * time.Hour
)

// BenchmarkPages renders every page of the console against the 1M-row
// outbox above on each database and reports each page's p95 (and p50) in
// milliseconds, as herald console serves them (the overview's one-second
// cache disabled: every request reads the database). Loading the rows
// takes a few minutes per database; run it on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 200x -timeout 60m ./console/
//
// BENCH_CONSOLE_EVENTS overrides the number of events (a quick trial:
// 50000).
func BenchmarkPages(b *testing.B) {
	events := benchEvents
	if v := os.Getenv("BENCH_CONSOLE_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < benchPerAgg*benchQuarantined/10 {
			b.Fatalf("BENCH_CONSOLE_EVENTS=%q: want a number of at least %d", v, benchPerAgg*benchQuarantined/10)
		}
		events = n
	}
	for _, server := range testenv.Servers {
		b.Run(string(server), func(b *testing.B) {
			db := testenv.NewHeraldDatabaseOn(b, server)
			ids := loadBenchOutbox(b, db, events)
			h, err := NewHandler(Config{Store: db.Store(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			agg := fmt.Sprintf("b-%d", events/benchPerAgg/2)
			pages := []struct{ name, path string }{
				{"overview", "/fragment/overview"},
				{"events", "/events"},
				{"events-by-id", "/events?event_id=" + ids.middle},
				{"events-by-aggregate", "/events?aggregate_type=order&aggregate_id=" + agg},
				{"events-by-type", "/events?event_type=order.shipped"},
				{"events-quarantined", "/events?state=quarantined"},
				{"events-time-range", "/events?from=" + ids.weekAgo.Format(time.RFC3339) + "&to=" + ids.weekAgo.Add(24*time.Hour).Format(time.RFC3339)},
				{"event", "/events/" + ids.quarantined},
				{"timeline", "/timeline?aggregate_type=order&aggregate_id=" + agg},
				{"quarantine", "/quarantine"},
				{"quarantine-by-class", "/quarantine?class=too_large"},
				{"quarantine-page-100", "/quarantine?after=" + ids.quarantineCursor},
				{"replays", "/replays"},
				{"audit", "/audit"},
			}
			var table []string
			for _, p := range pages {
				b.Run(p.name, func(b *testing.B) {
					durations := make([]time.Duration, 0, b.N)
					for b.Loop() {
						h.overviewMu.Lock()
						h.overview = nil
						h.overviewMu.Unlock()
						req := httptest.NewRequest(http.MethodGet, p.path, nil)
						rec := httptest.NewRecorder()
						start := time.Now()
						h.ServeHTTP(rec, req)
						durations = append(durations, time.Since(start))
						if rec.Code != http.StatusOK {
							b.Fatalf("GET %s: %d\n%s", p.path, rec.Code, rec.Body.String())
						}
					}
					slices.Sort(durations)
					p50 := durations[len(durations)/2]
					p95 := durations[min(len(durations)-1, len(durations)*95/100)]
					b.ReportMetric(float64(p95.Microseconds())/1000, "p95-ms")
					b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
					table = append(table, fmt.Sprintf("| %s | %s | %.1f | %.1f | %d |", server, p.name,
						float64(p50.Microseconds())/1000, float64(p95.Microseconds())/1000, len(durations)))
				})
			}
			fmt.Printf("\n| database | page | p50 ms | p95 ms | requests |\n| --- | --- | --- | --- | --- |\n%s\n", strings.Join(table, "\n"))
		})
	}
}

type benchIDs struct {
	middle, quarantined, quarantineCursor string
	weekAgo                               time.Time
}

// loadBenchOutbox fills the outbox with n events shaped as the writer and
// the relay leave them (the fixture writes the rows itself: through the
// writer and a relay the load would take an hour).
func loadBenchOutbox(b *testing.B, db *testenv.Database, n int) benchIDs {
	b.Helper()
	ctx := context.Background()
	start := time.Now().Add(-benchSpan).UTC().Truncate(time.Millisecond)
	step := benchSpan / time.Duration(n)
	aggs := n / benchPerAgg
	quarantinedAggs := min(benchQuarantined, aggs)
	every := aggs / quarantinedAggs
	const cols = 13
	const rowsPerStatement = 2000
	pg := db.Dialect.Name() == "postgres"
	placeholder := func(i int) string {
		if pg {
			return "$" + strconv.Itoa(i)
		}
		return "?"
	}
	ts := func(t time.Time) any {
		if pg {
			return t
		}
		return t.UTC().Format("2006-01-02 15:04:05.000000")
	}
	var ids benchIDs
	ids.weekAgo = time.Now().Add(-7 * 24 * time.Hour).UTC()
	began := time.Now()
	var rows []string
	var args []any
	flush := func() {
		if len(rows) == 0 {
			return
		}
		q := `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
			payload, occurred_at, published_at, attempts, next_attempt_at, error_class, quarantined_at) VALUES ` + strings.Join(rows, ",")
		if _, err := db.DB.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("load: %v", err)
		}
		rows, args = rows[:0], args[:0]
	}
	types := []string{"order.created", "order.paid", "order.packed", "order.shipped", "order.delivered",
		"order.reviewed", "order.updated", "order.updated", "order.updated", "order.closed"}
	// Events are added in time order, aggregates interleaved: event i is
	// seq i/aggs+1 of aggregate i%aggs.
	for i := range n {
		at := start.Add(time.Duration(i) * step)
		// A UUIDv7 of the event's time, its number in the random bits:
		// ids sort in the order the events were added, as the writer's.
		var u uuid.UUID
		ms := uint64(at.UnixMilli())
		for k := range 6 {
			u[k] = byte(ms >> (40 - 8*k))
		}
		u[6], u[8] = 0x70, 0x80
		for k := range 7 {
			u[15-k] = byte(uint64(i) >> (8 * k))
		}
		id := u.String()
		agg, seq := i%aggs, uint64(i/aggs+1)
		quarantined := seq == benchPerAgg && agg%every == 0
		var published, quarantinedAt, class any
		next := ts(at)
		if quarantined {
			quarantinedAt, class = ts(at.Add(time.Second)), "too_large"
			if ids.quarantined == "" {
				ids.quarantined = id
			}
		} else {
			published = ts(at.Add(50 * time.Millisecond))
		}
		if i == n/2 {
			ids.middle = id
		}
		var ph []string
		for c := range cols {
			ph = append(ph, placeholder(len(args)+c+1))
		}
		rows = append(rows, "("+strings.Join(ph, ",")+")")
		args = append(args, id, "order", fmt.Sprintf("b-%d", agg), seq, types[seq-1], 1,
			fmt.Sprintf(`{"order_id":%d,"customer_id":%d,"total_amount":"%d.90","note":"%s"}`, agg, agg%977, agg%500, strings.Repeat("x", 120)),
			ts(at), published, 1, next, class, quarantinedAt)
		if len(rows) == rowsPerStatement {
			flush()
		}
	}
	flush()
	never := `'9999-12-31 00:00:00'`
	if pg {
		never = `'infinity'`
	}
	if _, err := db.DB.ExecContext(ctx, `UPDATE outbox_events SET next_attempt_at = `+never+` WHERE quarantined_at IS NOT NULL`); err != nil {
		b.Fatal(err)
	}
	st := db.Store()
	for i := range 2000 {
		q := `INSERT INTO outbox_audit (at, actor, action, event_id, reason) VALUES (` + placeholder(1) + `, 'console:alice', 'retry', ` +
			placeholder(2) + `, 'bench')`
		if _, err := db.DB.ExecContext(ctx, q, ts(time.Now().Add(-time.Duration(i)*time.Minute)), ids.quarantined); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		sel := store.ReplaySelection{From: start, To: start.Add(time.Hour), AggregateType: "order"}
		if err := st.SaveReplayCheckpoint(ctx, store.ReplayCheckpoint{Name: fmt.Sprintf("replay-%d", i), Selection: sel, Replayed: int64(i)}, i%2 == 0); err != nil {
			b.Fatal(err)
		}
	}
	analyze := "ANALYZE TABLE outbox_events, outbox_audit"
	if pg {
		analyze = "VACUUM ANALYZE outbox_events"
	}
	if _, err := db.DB.ExecContext(ctx, analyze); err != nil {
		b.Fatal(err)
	}
	// The cursor of the quarantine's 100th page.
	list, err := st.ListQuarantined(ctx, store.QuarantineFilter{Limit: min(100*store.EventPageLimitDefault, quarantinedAggs)})
	if err != nil || len(list) == 0 {
		b.Fatalf("quarantine: %d, %v", len(list), err)
	}
	last := list[len(list)-1]
	ids.quarantineCursor = last.QuarantinedAt.UTC().Format(time.RFC3339Nano) + "_" + last.ID
	b.Logf("%s: %d events (%d quarantined) loaded in %v", db.Dialect.Name(), n, quarantinedAggs, time.Since(began).Round(time.Second))
	return ids
}
