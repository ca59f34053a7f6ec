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

// TestBinaryServesAndStopsOnSIGTERM builds the real binary, runs it on a
// fresh database (it applies both schemas itself) and a free port, creates
// an order over HTTP, and checks that SIGTERM stops it with exit code 0 and
// that its logs never show the DSN.
func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {
	d := testenv.NewDatabase(t)
	bin := filepath.Join(t.TempDir(), "orders")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"HERALD_ORDERS_ADDR=127.0.0.1:0", // the OS picks a free port; the log names it
		"HERALD_MYSQL_DSN="+d.DSN,
		"HERALD_ORDERS_TEST_ROLLBACKS=0",
		"HERALD_FAILPOINTS=",
	)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var logs logBuffer
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text())
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addrs <- line.Addr
			}
		}
		io.Copy(io.Discard, stderr)
		exited <- cmd.Wait()
	}()
	waited := false // set once exited was received
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			<-exited
		}
	})

	var addr string
	select {
	case addr = <-addrs:
	case err := <-exited:
		waited = true
		t.Fatalf("the binary exited before listening: %v\n%s", err, logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("no listening log line within a minute\n%s", logs.String())
	}
	base := "http://" + addr
	waitHealthy(t, base)

	resp, err := http.Post(base+"/orders", "application/json",
		strings.NewReader(`{"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /orders: %d %s", resp.StatusCode, body)
	}
	var created struct {
		OrderID     int64  `json:"order_id"`
		TotalAmount string `json:"total_amount"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.TotalAmount != "19.98" {
		t.Fatalf("answer %s (%v)", body, err)
	}
	var events int
	if err := d.DB.QueryRow("SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = ?", fmt.Sprint(created.OrderID)).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d events for order %d (%v), want 1", events, created.OrderID, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Fatalf("after SIGTERM: %v (want exit code 0)\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM\n%s", logs.String())
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"stopped"`) {
		t.Errorf("no clean-stop log line:\n%s", out)
	}
	if strings.Contains(out, d.DSN) || strings.Contains(out, "herald:herald@") {
		t.Errorf("the logs show the DSN:\n%s", out)
	}
}

// waitHealthy polls GET /healthz until it answers 200, for at most 30 s.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/healthz did not answer 200 within 30 s (last error %v)", err)
		case <-tick.C:
		}
	}
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
