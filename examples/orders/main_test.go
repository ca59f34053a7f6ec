package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
)

// binary is the orders command, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-orders-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "orders")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const orderBody = `{"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}`

// TestBinaryServesAndStopsOnSIGTERM runs the real binary on a fresh database
// (it applies both schemas itself) and a free port, creates an order over
// HTTP, and checks that SIGTERM stops it with exit code 0 and that its logs
// never show the DSN.
func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	d := testenv.NewDatabase(t)
	p := startBinary(t, d, "HERALD_ORDERS_TEST_ROLLBACKS=0")

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

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 30*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v (want exit code 0)\n%s", err, p.logs.String())
	}
	out := p.logs.String()
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
	p := startBinary(t, d, "HERALD_ORDERS_TEST_ROLLBACKS=1", "HERALD_FAILPOINTS=orders.after_commit=crash")

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
	err := p.wait(t, 30*time.Second)
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit: %v, want death by SIGKILL\n%s", err, p.logs.String())
	}
	if orders, events := counts(t, d); orders != 1 || events != 1 {
		t.Errorf("%d orders and %d events after the crash, want 1 and 1 (the rolled-back order left nothing)", orders, events)
	}
}

// process is a running orders binary.
type process struct {
	cmd    *exec.Cmd
	base   string
	logs   *logBuffer
	exited chan error
	waited bool
}

// startBinary starts the binary on d with HERALD_ORDERS_ADDR=127.0.0.1:0 (the
// OS picks a free port, the "listening" log line names it) plus env, and
// waits until /healthz answers 200. The process is killed when t ends if it
// is still running.
func startBinary(t *testing.T, d *testenv.Database, env ...string) *process {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "HERALD_ORDERS_ADDR=127.0.0.1:0", "HERALD_MYSQL_DSN="+d.DSN, "HERALD_FAILPOINTS=")
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: &logBuffer{}, exited: make(chan error, 1)}
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addrs <- line.Addr
			}
		}
		io.Copy(io.Discard, stderr)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if !p.waited {
			cmd.Process.Kill()
			<-p.exited
		}
	})

	select {
	case addr := <-addrs:
		p.base = "http://" + addr
	case err := <-p.exited:
		p.waited = true
		t.Fatalf("the binary exited before listening: %v\n%s", err, p.logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("no listening log line within a minute\n%s", p.logs.String())
	}
	p.waitHealthy(t)
	return p
}

// wait waits up to timeout for the process to exit and returns cmd.Wait's
// error.
func (p *process) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.exited:
		p.waited = true
		return err
	case <-time.After(timeout):
		t.Fatalf("still running after %v\n%s", timeout, p.logs.String())
		return nil
	}
}

// waitHealthy polls GET /healthz until it answers 200, for at most 30 s.
func (p *process) waitHealthy(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/healthz did not answer 200 within 30 s (last error %v)\n%s", err, p.logs.String())
		case <-tick.C:
		}
	}
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

// logBuffer collects the child's log lines.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
