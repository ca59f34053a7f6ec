package stock_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fixture is what every inventory test needs: the inventory's database, a
// topic, and a real warehouse service on its own database.
type fixture struct {
	db        *testenv.Database
	brokers   []string
	topic     string
	group     string
	adm       *kadm.Client
	warehouse *httptest.Server
	producer  *kgo.Client
}

func newFixture(t *testing.T, partitions int32) *fixture {
	t.Helper()
	return newFixtureOn(t, testenv.MariaDB, partitions)
}

// newFixtureOn is newFixture with the inventory's database on server "on" (the
// warehouse's stays on MariaDB: it is the other side's service).
func newFixtureOn(t *testing.T, on testenv.Server, partitions int32) *fixture {
	t.Helper()
	f := &fixture{db: testenv.NewHeraldDatabaseOn(t, on), brokers: testenv.KafkaBrokers(t)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := stock.Migrations.Up(ctx, f.db.DB); err != nil {
		t.Fatal(err)
	}
	f.topic = testenv.NewTopic(t, f.brokers, testenv.TopicOptions{Partitions: partitions})
	f.group = f.topic + "-inventory"
	f.adm = testenv.NewAdmin(t, f.brokers)
	deleteTopicAtCleanup(t, f.adm, kafka.DLQTopicName(f.topic, stock.ConsumerNameDefault))

	whDB := testenv.NewDatabase(t)
	if _, err := server.Migrations.Up(ctx, whDB.DB); err != nil {
		t.Fatal(err)
	}
	wh, err := server.New(server.Config{DB: whDB.DB, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	f.warehouse = httptest.NewServer(wh.Handler())
	t.Cleanup(f.warehouse.Close)

	f.producer, err = kgo.NewClient(kgo.SeedBrokers(f.brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.producer.Close)
	return f
}

func deleteTopicAtCleanup(t *testing.T, adm *kadm.Client, topic string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adm.DeleteTopic(ctx, topic)
	})
}

// event returns an envelope of typ v1 for an order of items and its id.
func event(t *testing.T, typ string, orderID int64, items ...contract.OrderItem) (string, []byte) {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	var data []byte
	var err error
	if typ == contract.TypeOrderCreated {
		data, err = json.Marshal(contract.OrderCreatedV1{OrderID: orderID, CustomerID: 42, Items: items, TotalAmount: "19.98"})
	} else {
		data, err = json.Marshal(contract.OrderCancelledV1{OrderID: orderID, CustomerID: 42, Items: items, TotalAmount: "19.98"})
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := envelope.Encode(envelope.Envelope{EventID: id, Type: typ, Version: 1, OccurredAt: time.Now(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return id, b
}

func (f *fixture) produce(t *testing.T, key string, values ...[]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: f.topic, Key: []byte(key), Value: v})
	}
	if err := f.producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func (f *fixture) warehouseStats(t *testing.T) server.Stats {
	t.Helper()
	var st server.Stats
	getJSON(t, f.warehouse.URL+"/stats", &st)
	return st
}

func (f *fixture) lag(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	total, _, err := kafka.GroupLag(ctx, f.adm, f.group, f.topic)
	if err != nil {
		t.Logf("lag: %v", err)
		return -1
	}
	return total
}

func (f *fixture) count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	return queryInt(t, f.db.DB, f.db.SQL(query), args...)
}

func queryInt(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n.Int64
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// runService runs an in-process inventory service until t ends.
func runService(t *testing.T, f *fixture, cfg stock.Config) *stock.Service {
	t.Helper()
	cfg.DB, cfg.Dialect = f.db.DB, f.db.Dialect
	cfg.Brokers = f.brokers
	cfg.Topics = []string{f.topic}
	cfg.Group = f.group
	cfg.WarehouseURL = f.warehouse.URL
	cfg.Addr = "-"
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = 100 * time.Millisecond
	}
	cfg.Logger = quietLogger()
	svc, err := stock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("Run did not return within a minute of cancel")
		}
	})
	return svc
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The inventory binaries: the example's own main, and the drills' main
// that runs the same service with herald's failpoints armed from
// HERALD_FAILPOINTS.
const (
	inventoryMain      = "./examples/inventory"
	inventoryDrillMain = "./cmd/herald/internal/drill/services/inventory"
)

// startInventory runs the inventory binary built from pkg (inventoryMain or
// inventoryDrillMain) against f with extra environment; it is killed when t
// ends if it still runs.
func startInventory(t *testing.T, pkg string, f *fixture, extra ...string) *testenv.Process {
	t.Helper()
	return testenv.StartProcess(t, testenv.ProcessOptions{
		Path:    testenv.Binary(t, pkg),
		DropEnv: []string{"HERALD_"},
		Env: append([]string{
			"HERALD_DATABASE_URL=" + f.db.DSN,
			"HERALD_KAFKA_BROKERS=" + strings.Join(f.brokers, ","),
			"HERALD_INVENTORY_TOPICS=" + f.topic,
			"HERALD_INVENTORY_GROUP=" + f.group,
			"HERALD_WAREHOUSE_URL=" + f.warehouse.URL,
			"HERALD_INVENTORY_SESSION_TIMEOUT=6s",
			"HERALD_INVENTORY_SWEEP_INTERVAL=100ms",
			"HERALD_INVENTORY_SWEEP_GRACE=100ms",
		}, extra...),
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}
