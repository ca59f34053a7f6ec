// Package deploy_test checks the monitoring deploy/ ships against what
// herald's processes export.
package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

var (
	recorded   = regexp.MustCompile(`(?m)^\s*- record: (\S+)`)
	ruleName   = regexp.MustCompile(`[a-z_]+:[a-z0-9_:]+`)
	metricName = regexp.MustCompile(`\bherald_[a-z0-9_]+`)
)

// usedMetrics returns the herald_ metrics the expressions name, and the
// recording rules' names they use.
func usedMetrics(exprs []string) (metrics, rules map[string]bool) {
	metrics, rules = map[string]bool{}, map[string]bool{}
	for _, e := range exprs {
		for _, r := range ruleName.FindAllString(e, -1) {
			rules[r] = true
		}
		for _, m := range metricName.FindAllString(ruleName.ReplaceAllString(e, ""), -1) {
			metrics[m] = true
		}
	}
	return metrics, rules
}

// dashboardExprs returns every query of the Grafana dashboard: panels',
// annotations' and variables'.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("grafana/herald.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
		Annotations struct{ List []struct{ Expr string } } `json:"annotations"`
		Templating  struct{ List []struct{ Query any } }   `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("grafana/herald.json: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, a := range d.Annotations.List {
		exprs = append(exprs, a.Expr)
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok {
			exprs = append(exprs, q)
		}
	}
	return exprs
}

// scrape returns the sample names of addr's /metrics.
func scrape(t *testing.T, addr string) map[string]bool {
	t.Helper()
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		names[name] = true
	}
	io.Copy(io.Discard, resp.Body)
	return names
}

// TestMonitoringUsesExportedMetrics: every herald_ metric the alerting
// rules and the dashboard name is exported by a real process (a polling
// relay with cleanup on MariaDB, a WAL relay on PostgreSQL with its slot,
// the inventory consumer after it processed an event), and every
// recording rule the dashboard reads is defined.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	rulesText, err := os.ReadFile("prometheus/herald-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range recorded.FindAllStringSubmatch(string(rulesText), -1) {
		defined[m[1]] = true
	}
	ruleMetrics, _ := usedMetrics([]string{string(rulesText)})
	dashMetrics, dashRules := usedMetrics(dashboardExprs(t))
	for r := range dashRules {
		if !defined[r] {
			t.Errorf("the dashboard reads %s, which no recording rule defines", r)
		}
	}
	want := map[string]string{}
	for m := range ruleMetrics {
		want[m] = "herald-alerts.yml"
	}
	for m := range dashMetrics {
		if want[m] == "" {
			want[m] = "herald.json"
		}
	}

	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	topics := map[string]string{"order": topic}

	maria := testenv.NewHeraldDatabase(t)
	poll := testenv.StartRelay(t, testenv.RelayOptions{Name: "poll", DSN: maria.DSN, Brokers: brokers, Topics: topics,
		Args: []string{"--cleanup-retention", "1h", "--cleanup-interval", "1s", "--backlog-interval", "1s"}})

	pg := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	slot := wal.SlotName(pg.Name)
	t.Cleanup(func() { // after the relay is killed (cleanups run last first)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pg.DB.ExecContext(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL`, slot)
		pg.DB.ExecContext(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, slot)
	})
	stream := testenv.StartRelay(t, testenv.RelayOptions{Name: "wal", DSN: pg.DSN, Brokers: brokers, Topics: topics,
		Env: []string{"HERALD_SOURCE=wal"}, Args: []string{"--backlog-interval", "1s"}})

	inv := testenv.NewHeraldDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := stock.Migrations.Up(ctx, inv.DB); err != nil {
		t.Fatal(err)
	}
	whDB := testenv.NewDatabase(t)
	if _, err := server.Migrations.Up(ctx, whDB.DB); err != nil {
		t.Fatal(err)
	}
	wh, err := server.New(server.Config{DB: whDB.DB})
	if err != nil {
		t.Fatal(err)
	}
	warehouse := httptest.NewServer(wh.Handler())
	t.Cleanup(warehouse.Close)
	consumerAddr := freeAddr(t)
	testenv.StartProcess(t, testenv.ProcessOptions{
		Name: "inventory", Path: testenv.Binary(t, "./examples/inventory"), DropEnv: []string{"HERALD_"},
		Env: []string{
			"HERALD_DATABASE_URL=" + inv.DSN,
			"HERALD_KAFKA_BROKERS=" + strings.Join(brokers, ","),
			"HERALD_INVENTORY_TOPICS=" + topic,
			"HERALD_INVENTORY_GROUP=" + topic + "-inventory",
			"HERALD_INVENTORY_ADDR=" + consumerAddr,
			"HERALD_WAREHOUSE_URL=" + warehouse.URL,
		}})

	// One event through each relay, once the consumer holds the topic's
	// partitions (a new group starts at the end): it processes them, and
	// the stream's series exist once it streamed one.
	adm := testenv.NewAdmin(t, brokers)
	testenv.WaitFor(t, time.Minute, "the inventory consumer joined its group", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		groups, err := adm.DescribeGroups(ctx, topic+"-inventory")
		if err != nil {
			return false, err.Error()
		}
		g := groups[topic+"-inventory"]
		return g.State == "Stable" && len(g.Members) > 0, "group state " + g.State
	})
	for _, d := range []*testenv.Database{maria, pg} {
		d.AddEvents(t, outbox.Event{AggregateType: "order", AggregateID: "9182", EventType: "order.created", SchemaVersion: 1,
			Payload: []byte(`{"order_id":9182,"customer_id":42,"total_amount":"9.99","items":[{"sku":"SKU-1","quantity":1,"unit_price":"9.99"}]}`)})
	}

	var missing []string
	testenv.WaitFor(t, 40*time.Second, "every metric the monitoring uses exported", func() (bool, string) {
		exported := map[string]bool{}
		for _, addr := range []string{poll.MetricsAddr(), stream.MetricsAddr(), consumerAddr} {
			if addr == "" {
				return false, "a relay has not logged its metrics address"
			}
			for n := range scrape(t, addr) {
				exported[n] = true
			}
		}
		missing = missing[:0]
		for m, where := range want {
			if !exported[m] {
				missing = append(missing, m+" ("+where+")")
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, "not exported: " + strings.Join(missing, ", ") +
			"; the consumer's metrics:\n" + consumerMetrics(consumerAddr)
	})
}

// consumerMetrics returns the herald_consumer_ lines of addr's /metrics.
func consumerMetrics(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "herald_consumer_") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// freeAddr returns a loopback address no one listens on yet.
func freeAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}
