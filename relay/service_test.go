package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// serviceFrames are the functions of the goroutines a running Service
// starts: the relay's loop, the backlog sampler, the cleaner and the HTTP
// server.
var serviceFrames = []string{
	"relay.(*Relay).Run(", "metrics.(*Backlog).Run(", "relay.(*Cleaner).Run(", "net/http.(*Server).Serve(",
}

// TestServiceRunsAndStopsEverything: a Service over MariaDB and Kafka
// publishes committed events, serves /healthz, /readyz and /metrics, and
// runs the backlog sampler and the cleaner. Cancelled while a cleanup pass
// is in progress (held until the test releases it), Run does not return
// before the pass does: it waits. Once it returns, every goroutine it
// started has returned (none of their functions is on any goroutine's
// stack) and the endpoints are gone.
func TestServiceRunsAndStopsEverything(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	e.preload(t, 50, 5)
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: e.brokers, DeliveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	logs := &testenv.LogBuffer{}
	st := &heldCleanupStore{Store: mysql.NewStore(e.db.DB), cleaning: make(chan struct{}), release: make(chan struct{})}
	svc, err := relay.NewService(relay.ServiceConfig{
		Relay:           relay.Config{ID: "service-test", Topics: map[string]string{"order": e.topic}},
		Cleaner:         relay.CleanerConfig{Retention: time.Hour, Interval: time.Hour},
		BacklogInterval: time.Second,
		MetricsAddr:     "127.0.0.1:0",
		Logger:          slog.New(slog.NewJSONHandler(logs, nil)),
	}, st, producer)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()

	var addr string
	testenv.WaitFor(t, 30*time.Second, "the service listening", func() (bool, string) {
		addr = logField(logs, "relay listening", "metrics_addr")
		return addr != "", "no \"relay listening\" log yet"
	})
	base := "http://" + addr
	e.waitDrained(t, time.Minute)
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ready",
		"/metrics": "herald_relay_claims_total",
	} {
		testenv.WaitFor(t, 30*time.Second, path, func() (bool, string) {
			code, body := get(base + path)
			return code == http.StatusOK && strings.Contains(body, want), body
		})
	}
	testenv.WaitFor(t, 30*time.Second, "backlog gauges sampled", func() (bool, string) {
		_, body := get(base + "/metrics")
		return strings.Contains(body, "herald_outbox_pending_events 0"), "no backlog reading of 0 pending yet"
	})
	for _, f := range serviceFrames {
		if !strings.Contains(goroutines(), f) {
			t.Fatalf("no goroutine runs %s while the service runs: the check below would prove nothing", f)
		}
	}

	cancel()
	select {
	case <-st.cleaning:
	case <-time.After(time.Minute):
		t.Fatal("the cleanup pass never saw the cancel")
	}
	// Run may only get as far as waiting for the goroutines it started.
	testenv.WaitFor(t, time.Minute, "Run waiting for the cleaner", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while the cleaner was still in a pass", err)
		default:
		}
		for _, g := range strings.Split(goroutines(), "\n\n") {
			if strings.Contains(g, "relay.(*Service).Run(") && strings.Contains(g, "sync.(*WaitGroup).Wait(") {
				return true, ""
			}
		}
		return false, "Run is not waiting yet"
	})
	close(st.release)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the cleanup pass")
	}
	stacks := goroutines()
	for _, f := range serviceFrames {
		if strings.Contains(stacks, f) {
			t.Errorf("Run returned, yet a goroutine still runs %s:\n%s", f, stacks)
		}
	}
	if code, body := get(base + "/healthz"); code != 0 {
		t.Errorf("/healthz answered %d %q after Run returned", code, body)
	}
	if !strings.Contains(logs.String(), "relay stopped") {
		t.Errorf("no clean stop logged:\n%s", logs.String())
	}
	e.verifyTopic(t, nil, nil)
}

// TestServiceRunFailsWhenItCannotListen: an address already taken is an
// error from Run before anything starts.
func TestServiceRunFailsWhenItCannotListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	e := newEnv(t, testenv.TopicOptions{})
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: e.brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	svc, err := relay.NewService(relay.ServiceConfig{
		MetricsAddr: taken.Addr().String(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, mysql.NewStore(e.db.DB), producer)
	if err != nil {
		t.Fatal(err)
	}
	err = svc.Run(context.Background())
	var opErr *net.OpError
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) || !errors.As(err, &opErr) {
		t.Fatalf("Run = %v, want a listen error naming %s", err, taken.Addr())
	}
	if stacks := goroutines(); strings.Contains(stacks, "relay.(*Relay).Run(") {
		t.Errorf("the relay runs although Run failed:\n%s", stacks)
	}
}

// heldCleanupStore is a MariaDB store whose cleanup pass lasts until its
// context is cancelled and then until the test releases it: a pass in
// progress at shutdown, as a long DELETE would be.
type heldCleanupStore struct {
	*store.Store
	cleaning chan struct{} // closed once the pass saw the cancel
	release  chan struct{}
}

func (s *heldCleanupStore) Cleanup(ctx context.Context, _ store.CleanupRequest) (store.CleanupReport, error) {
	<-ctx.Done()
	close(s.cleaning)
	<-s.release
	return store.CleanupReport{}, ctx.Err()
}

// goroutines is the stack of every goroutine.
func goroutines() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// get returns the status and body of a GET; status 0 when nothing answers.
func get(url string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// logField returns key of the first JSON log line of logs with message msg,
// or "".
func logField(logs *testenv.LogBuffer, msg, key string) string {
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			v, _ := line[key].(string)
			return v
		}
	}
	return ""
}
