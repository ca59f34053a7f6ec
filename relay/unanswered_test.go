package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// silentProducer never answers: like franz-go holding a record whose
// produce request went out unanswered when the brokers died (the
// idempotent producer cannot know whether it was written, so it neither
// acknowledges nor fails it until a broker answers).
type silentProducer struct{}

func (silentProducer) Produce(context.Context, *kgo.Record, func(*kgo.Record, error)) {}

// TestUnansweredPublishIsBoundedByTheLease: when Kafka never answers, the
// relay gives the batch up when its lease ends — the events are recorded as
// failed (class timeout, last_error, backoff) and released, nothing is
// quarantined — and a relay told to stop returns within its shutdown
// timeout instead of hanging.
func TestUnansweredPublishIsBoundedByTheLease(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	testenv.AddEvents(t, d.DB, event("a", 1), event("a", 2), event("b", 1))
	r, err := relay.New(relay.Config{
		ID: "silent", Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond, ShutdownTimeout: time.Second,
		Topics: map[string]string{"order": "unused"},
		Logger: slog.New(slog.NewJSONHandler(&testenv.LogBuffer{}, nil)),
	}, mysql.NewStore(d.DB), silentProducer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testenv.WaitFor(t, 20*time.Second, "unanswered events recorded as failed and released", func() (bool, string) {
		n := d.Count(t, `SELECT COUNT(*) FROM outbox_events WHERE error_class = 'timeout' AND last_error <> ''
			AND attempts > 0 AND published_at IS NULL`)
		return n == 2, fmt.Sprintf("%d of 2 heads failed with class timeout", n)
	})
	if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
		t.Errorf("%d events quarantined for an unanswered publish", n)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context's cancellation (shutdown timeout 1s)")
	}
}
