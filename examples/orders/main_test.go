package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

const orderBody = `{"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}`

// TestBinaryServesAndStopsOnSIGTERM runs the real binary on a fresh database
// (it applies both schemas itself) and a free port, creates an order over
// HTTP, and checks that SIGTERM stops it with exit code 0 and that its logs
// never show the DSN.
func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	d := testenv.NewDatabase(t)
	p := startBinary(t, ordersMain, d, "HERALD_ORDERS_TEST_ROLLBACKS=0")

	resp := p.post(t, "/orders", orderBody, nil)
	if resp.status != http.StatusCreated {
		t.Fatalf("POST /orders: %d %s", resp.status, resp.body)
	}
	var created struct {
		OrderID     int64  `json:"order_id"`
		TotalAmount string `json:"total_amount"`
	}
	if err := json.Unmarshal(resp.body, &created); err != nil || created.TotalAmount != "19.98" {
		t.Fatalf("answer %s (%v)", resp.body, err)
	}
	if orders, events := counts(t, d); orders != 1 || events != 1 {
		t.Fatalf("%d orders and %d events, want 1 and 1", orders, events)
	}

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit := p.Wait(t, 30*time.Second); exit.Code != 0 {
		t.Fatalf("after SIGTERM: %v (want exit code 0)\n%s", exit, p.Log())
	}
	out := p.Log()
	if !strings.Contains(out, `"msg":"stopped"`) {
		t.Errorf("no clean-stop log line:\n%s", out)
	}
	if strings.Contains(out, d.DSN) || strings.Contains(out, "herald:herald@") {
		t.Errorf("the logs show the DSN:\n%s", out)
	}
}

// TestBinaryCrashAfterCommit is crash window 1 seen from the service: with
// the orders.after_commit failpoint the process dies by SIGKILL after the
// commit and before answering. The client gets no answer, yet the order and
// its event are both committed, so the relay will publish the event. It
// also checks that HERALD_ORDERS_TEST_ROLLBACKS=1 reaches the service.
func TestBinaryCrashAfterCommit(t *testing.T) {
	d := testenv.NewDatabase(t)
	p := startBinary(t, ordersDrillMain, d, "HERALD_ORDERS_TEST_ROLLBACKS=1", "HERALD_FAILPOINTS=orders.after_commit=crash")

	rolledBack := p.post(t, "/orders", orderBody, map[string]string{"X-Herald-Rollback": "1"})
	if rolledBack.status != http.StatusInternalServerError || !strings.Contains(string(rolledBack.body), `"deliberate_rollback"`) {
		t.Fatalf("rollback request: %d %s", rolledBack.status, rolledBack.body)
	}

	req, _ := http.NewRequest("POST", p.base+"/orders", strings.NewReader(orderBody))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("got an answer (%d %s), want the process to die first", resp.StatusCode, body)
	}
	if exit := p.Wait(t, 30*time.Second); exit.Signal != syscall.SIGKILL {
		t.Fatalf("exit: %v, want death by SIGKILL\n%s", exit, p.Log())
	}
	if orders, events := counts(t, d); orders != 1 || events != 1 {
		t.Errorf("%d orders and %d events after the crash, want 1 and 1 (the rolled-back order left nothing)", orders, events)
	}
}

// process is a running orders binary and the base URL it serves.
type process struct {
	*testenv.Process
	base string
}

// The orders binaries: the example's own main, and the drills' main that
// runs the same service with herald's failpoints armed from
// HERALD_FAILPOINTS.
const (
	ordersMain      = "./examples/orders"
	ordersDrillMain = "./cmd/herald/internal/drill/services/orders"
)

// startBinary starts the binary built from pkg (ordersMain or
// ordersDrillMain) on d with HERALD_ORDERS_ADDR=127.0.0.1:0 (the
// OS picks a free port, the "listening" log line names it) plus env, and
// waits until /healthz answers 200. The process is killed when t ends if it
// is still running.
func startBinary(t *testing.T, pkg string, d *testenv.Database, env ...string) *process {
	t.Helper()
	p := &process{Process: testenv.StartProcess(t, testenv.ProcessOptions{
		Path:    testenv.Binary(t, pkg),
		DropEnv: []string{"HERALD_"},
		Env:     append([]string{"HERALD_ORDERS_ADDR=127.0.0.1:0", "HERALD_MYSQL_DSN=" + d.DSN}, env...),
	})}
	testenv.WaitFor(t, time.Minute, "the listening log line", func() (bool, string) {
		exited := p.Exited()
		for _, l := range strings.Split(p.Log(), "\n") {
			var line struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "listening" {
				p.base = "http://" + line.Addr
				return true, ""
			}
		}
		if exited {
			t.Fatalf("the binary exited before listening: %v\n%s", p.Exit(), p.Log())
		}
		return false, p.Tail(5)
	})
	testenv.Eventually(t, 30*time.Second, "/healthz answering 200", func() bool {
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

type answer struct {
	status int
	body   []byte
}

func (p *process) post(t *testing.T, path, body string, headers map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", p.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, body: b}
}

// counts returns the number of orders and of outbox events in d.
func counts(t *testing.T, d *testenv.Database) (orders, events int) {
	t.Helper()
	if err := d.DB.QueryRow("SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM outbox_events)").Scan(&orders, &events); err != nil {
		t.Fatal(err)
	}
	return orders, events
}
