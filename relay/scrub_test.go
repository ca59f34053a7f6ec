package relay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// failingProducer fails every record with err, asynchronously like a real
// client.
type failingProducer struct{ err error }

func (p failingProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	go promise(r, p.err)
}

// TestFailureTextIsScrubbed: a publication error whose text carries a MySQL
// DSN password and SASL secrets (as a misconfigured client might echo
// them) reaches last_error, the outbox_failures log and the relay's logs
// with none of the secrets, and logs retry_in as a duration string (none
// for the attempt that quarantines). The
// database is real; the producer is a stub because the claim under test is
// scrubbing, not Kafka.
func TestFailureTextIsScrubbed(t *testing.T) {
	secrets := []string{"Dsn-Pa55word", "Sasl-S3cret", "Jaas-S3cret", "Url-S3cret"}
	failure := errors.New("produce to broker: dial mysql herald:Dsn-Pa55word@tcp(db.internal:3306)/orders failed; " +
		"SASL/PLAIN handshake: sasl.password=Sasl-S3cret rejected; " +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="herald" password="Jaas-S3cret"; ` +
		"bootstrap sasl_ssl://herald:Url-S3cret@broker.internal:9093 unreachable")

	d := testenv.NewHeraldDatabase(t)
	testenv.AddEvents(t, d.DB, event("a", 1), event("a", 2), event("b", 1))

	var logs testenv.LogBuffer
	r, err := relay.New(relay.Config{
		ID: "scrub", Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond,
		// Two attempts: the first failure is logged as a retry (warning),
		// the second quarantines (error).
		MaxAttempts: 2, BackoffBase: 50 * time.Millisecond, BackoffCap: 100 * time.Millisecond,
		Topics: map[string]string{"order": "unused"},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, mysql.NewStore(d.DB), failingProducer{failure})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testenv.WaitFor(t, 30*time.Second, "both heads quarantined", func() (bool, string) {
		n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL")
		return n == 2, fmt.Sprintf("%d quarantined", n)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	var stored []string
	for _, q := range []string{
		"SELECT last_error FROM outbox_events WHERE last_error IS NOT NULL AND error_class <> 'held'",
		"SELECT error FROM outbox_failures",
	} {
		rows, err := d.DB.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			stored = append(stored, s)
		}
		rows.Close()
	}
	if len(stored) < 4 { // two heads, two attempts each, in the failure log; their last_error
		t.Fatalf("found %d stored failure texts, want at least 4", len(stored))
	}
	logText := logs.String()
	if !strings.Contains(logText, `"msg":"publish failed"`) || !strings.Contains(logText, `"error_class":"unknown"`) ||
		!strings.Contains(logText, `"event_id"`) || !strings.Contains(logText, `"level":"ERROR"`) {
		t.Fatalf("the relay logged no failure with event_id and error_class, and no quarantine:\n%s", logText)
	}
	sc := bufio.NewScanner(strings.NewReader(logText))
	for sc.Scan() {
		var line struct {
			Msg         string
			Quarantined bool
			RetryIn     any `json:"retry_in"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "publish failed" {
			continue
		}
		if line.Quarantined {
			// Quarantined: no retry is coming, so no retry_in (issue 35).
			if line.RetryIn != nil {
				t.Errorf("a quarantined event's line has retry_in %#v", line.RetryIn)
			}
		} else if s, ok := line.RetryIn.(string); !ok {
			t.Errorf("retry_in is %#v, want a duration string such as \"50ms\"", line.RetryIn)
		} else if _, err := time.ParseDuration(s); err != nil {
			t.Errorf("retry_in %q: %v", s, err)
		}
	}
	for _, secret := range secrets {
		for _, s := range stored {
			if strings.Contains(s, secret) {
				t.Errorf("stored failure text contains %q: %s", secret, s)
			}
		}
		if strings.Contains(logText, secret) {
			t.Errorf("relay log contains %q", secret)
		}
	}
	if !strings.Contains(stored[0], "db.internal:3306") {
		t.Errorf("scrubbing removed more than the secrets: %s", stored[0])
	}
	t.Logf("stored: %s", stored[0])
}
