package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/mysql"
)

// TestConfigurationErrorIsNotTheEventsFault: a route to a topic Kafka
// refuses to write (an internal topic: INVALID_TOPIC_EXCEPTION) fails with
// class configuration. The event is not at fault: it is not quarantined,
// even past MaxAttempts, and it waits for the operator to fix the route.
// The failure is logged at error level with retry_in as a duration string.
func TestConfigurationErrorIsNotTheEventsFault(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	ids := testenv.AddEvents(t, d.DB, testenv.OrderEvents("config-1")...)

	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var logs syncBuffer
	r, err := relay.New(relay.Config{ID: "config-relay", Topics: map[string]string{"order": "__consumer_offsets"},
		MaxAttempts: 1, BackoffBase: 10 * time.Millisecond, BackoffCap: 20 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewJSONHandler(&logs, nil))},
		mysql.NewStore(d.DB), producer)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var attempts int
	var quarantined bool
	var class string
	testenv.WaitFor(t, time.Minute, "three failed attempts, or a quarantine", func() (bool, string) {
		if err := d.DB.QueryRow(`SELECT attempts, quarantined_at IS NOT NULL, COALESCE(error_class, '')
			FROM outbox_events WHERE id = ?`, ids[0]).Scan(&attempts, &quarantined, &class); err != nil {
			t.Fatal(err)
		}
		return quarantined || (attempts >= 3 && class != ""), fmt.Sprintf("%d attempts, class %q", attempts, class)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if quarantined || class != kafka.ClassConfiguration {
		t.Errorf("after %d attempts (MaxAttempts 1): quarantined %v, class %q; want class %q and not quarantined",
			attempts, quarantined, class, kafka.ClassConfiguration)
	}

	failures := 0
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line struct {
			Level, Msg string
			Class      string `json:"error_class"`
			RetryIn    any    `json:"retry_in"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Msg != "publish failed" {
			continue
		}
		failures++
		s, isString := line.RetryIn.(string)
		if _, err := time.ParseDuration(s); !isString || err != nil {
			t.Errorf("retry_in is %#v, want a duration string such as \"10ms\"", line.RetryIn)
		}
		if line.Level != "ERROR" || line.Class != kafka.ClassConfiguration {
			t.Errorf("logged at %s with class %q, want ERROR and %q", line.Level, line.Class, kafka.ClassConfiguration)
		}
	}
	if failures == 0 {
		t.Errorf("no \"publish failed\" line in the log:\n%s", logs.String())
	}
}
