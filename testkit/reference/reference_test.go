package reference_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/reference"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestRoundsPublishEveryEvent: rounds of the loop publish a backlog, 100
// events a round, until nothing is ready; every event is marked published
// and on the topic (kcat), on each database server.
func TestRoundsPublishEveryEvent(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, on testenv.Server) {
		d := testenv.NewHeraldDatabaseOn(t, on)
		brokers := testenv.KafkaBrokers(t)
		topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
		var events []outbox.Event
		for i := range 250 {
			events = append(events, outbox.Event{AggregateType: "order", AggregateID: fmt.Sprintf("o-%d", i%10),
				EventType: "order.updated", SchemaVersion: 1, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		d.AddEvents(t, events...)
		producer, err := reference.NewProducer(brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var rounds []int
		for {
			n, err := reference.Round(ctx, d.DB, d.Dialect, producer)
			if errors.Is(err, reference.ErrNothingReady) {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", len(rounds)+1, err)
			}
			rounds = append(rounds, n)
		}
		if fmt.Sprint(rounds) != "[100 100 50]" {
			t.Errorf("rounds published %v, want [100 100 50]", rounds)
		}
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL"); n != 0 {
			t.Errorf("%d events left unpublished", n)
		}
		rows, err := verify.LoadOutbox(ctx, d.DB)
		if err != nil {
			t.Fatal(err)
		}
		records, err := verify.ReadTopic(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		if report := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records}); len(report.Missing) != 0 || report.Records != 250 {
			t.Errorf("topic: %s", report.Summary())
		}
	})
}
