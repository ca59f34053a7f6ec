package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestQuarantineRoundTrip, on a real relay and Kafka: an event too large for
// its topic is quarantined and its aggregate's later events are held; once
// the topic accepts it, `herald quarantine retry` puts it back and the held
// events follow it in order; the retry is audited.
func TestQuarantineRoundTrip(t *testing.T) {
	testenv.OnEachServer(t, testQuarantineRoundTrip)
}

func testQuarantineRoundTrip(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	brokers := testenv.KafkaBrokers(t)
	small := "20000"
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3,
		Configs: map[string]*string{"max.message.bytes": &small}})
	ctx := context.Background()

	pad := make([]byte, 40_000) // random: compression cannot shrink it under the limit
	rand.Read(pad)
	big, _ := json.Marshal(map[string]string{"note": base64.StdEncoding.EncodeToString(pad)})
	w, _ := outbox.NewWriter(outbox.Config{Dialect: d.Dialect})
	tx, err := d.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := w.Add(ctx, tx,
		outbox.Event{AggregateType: "order", AggregateID: "p", EventType: "order.created", SchemaVersion: 1, Payload: big},
		outbox.Event{AggregateType: "order", AggregateID: "p", EventType: "order.updated", SchemaVersion: 1, Payload: json.RawMessage(`{}`)},
		outbox.Event{AggregateType: "order", AggregateID: "p", EventType: "order.cancelled", SchemaVersion: 1, Payload: json.RawMessage(`{}`)},
		outbox.Event{AggregateType: "order", AggregateID: "q", EventType: "order.created", SchemaVersion: 1, Payload: json.RawMessage(`{}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	poison := ids[0]

	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	st := d.Store()
	r, err := relay.New(relay.Config{ID: "roundtrip", Topics: map[string]string{"order": topic}, Lease: 15 * time.Second,
		PollInterval: 50 * time.Millisecond, BackoffBase: 100 * time.Millisecond}, st, producer)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()

	testenv.Eventually(t, time.Minute, "the poison event quarantined, its successors held, q published", func() bool {
		b, err := st.ReadBacklog(ctx)
		return err == nil && b.Quarantined == 1 && b.Held == 2 && b.Ready+b.BackingOff == 0
	})
	dsn := "--database-url=" + d.DSN
	if out, _ := run(t, "quarantine", "list", dsn, "--class", kafka.ClassTooLarge); !strings.Contains(out, poison) {
		t.Fatalf("quarantine list does not show the poison event:\n%s", out)
	}

	// Fix the cause: the topic now takes records of up to 1 MB.
	adm := testenv.NewAdmin(t, brokers)
	bigger := "1000000"
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &bigger}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("raise max.message.bytes: %v", err)
	}
	out, code := run(t, "quarantine", "retry", dsn, "--actor", "oncall", "--reason", "max.message.bytes raised", poison)
	if code != 0 || !strings.Contains(out, "2 held event(s) released") {
		t.Fatalf("retry: exit %d\n%s", code, out)
	}
	testenv.Eventually(t, time.Minute, "everything published", func() bool {
		return d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE NOT "+verify.PublishedSQL) == 0
	})

	records, err := verify.ReadTopic(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := verify.LoadOutbox(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if rep := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records}); !rep.OK() {
		t.Errorf("after the retry the topic is wrong: %s", rep)
	}
	if audits := d.Count(t, "SELECT COUNT(*) FROM outbox_audit WHERE event_id = ? AND action = 'retry' AND actor = 'oncall'", poison); audits != 1 {
		t.Errorf("%d audit rows for the retry, want 1", audits)
	}
}
