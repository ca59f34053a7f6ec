package inbox_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/kafka"
)

// testLogger logs warnings and errors to the test's output only with -v.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(discard{}, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// createAppliedTable makes the table the test handler writes to. It has no
// unique key on purpose: a second application of an event would show up as
// a second row, not as an error.
func createAppliedTable(t testing.TB, db *sql.DB) {
	t.Helper()
	_, err := db.Exec(`CREATE TABLE applied (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		event_id CHAR(36) NOT NULL,
		order_id BIGINT NOT NULL,
		partition_no INT NOT NULL,
		offset_no BIGINT NOT NULL,
		consumer VARCHAR(64) NOT NULL DEFAULT ''
	) ENGINE=InnoDB`)
	if err != nil {
		t.Fatal(err)
	}
}

// recordApplied is a handler that is not idempotent by itself.
func recordApplied(instance string) inbox.HandlerFunc {
	return func(ctx context.Context, tx *sql.Tx, m inbox.Message) error {
		order, ok := envelope.PayloadAs[contract.OrderCreatedV1](m.Event)
		if !ok {
			return fmt.Errorf("unexpected payload %T", m.Payload)
		}
		_, err := tx.ExecContext(ctx,
			"INSERT INTO applied (event_id, order_id, partition_no, offset_no, consumer) VALUES (?, ?, ?, ?, ?)",
			m.EventID, order.OrderID, m.Partition, m.Offset, instance)
		return err
	}
}

// orderCreated returns an order.created v1 envelope and its event id.
func orderCreated(t testing.TB, orderID int64) (string, []byte) {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	data, err := json.Marshal(contract.OrderCreatedV1{
		OrderID: orderID, CustomerID: 42, TotalAmount: "19.98",
		Items: []contract.OrderItem{{SKU: "SKU-1", Quantity: 2, UnitPrice: "9.99"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := envelope.Encode(envelope.Envelope{EventID: id, Type: contract.TypeOrderCreated, Version: 1, OccurredAt: time.Now(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return id, b
}

func newProducer(t testing.TB, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// deleteTopicAtCleanup removes a topic the code under test created.
func deleteTopicAtCleanup(t testing.TB, brokers []string, topic string) {
	t.Helper()
	adm := testenv.NewAdmin(t, brokers)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopic(ctx, topic); err != nil && !strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
			t.Logf("delete topic %s: %v", topic, err)
		}
	})
}

// startConsumer runs c until the returned stop is called (or t ends) and
// fails t if Run returns an error.
func startConsumer(t *testing.T, c *inbox.Consumer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Run did not return within a minute of cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// lagOf returns the group's total lag on topic.
func lagOf(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	total, _, err := kafka.GroupLag(ctx, adm, group, topic)
	if err != nil {
		t.Logf("lag: %v", err)
		return -1
	}
	return total
}

func countRows(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
