package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/testenv"
	"github.com/herald-outbox/herald/internal/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// TestEmbeddedRelayPublishes runs the example on a fresh database (it
// applies herald's schema itself) and a fresh topic: the event it adds is
// read from the topic by kcat, an independent reader, and marked published
// in the outbox; SIGTERM then stops the service cleanly (exit 0) and its
// logs never show the DSN.
func TestEmbeddedRelayPublishes(t *testing.T) {
	d := testenv.NewDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	p := testenv.StartProcess(t, testenv.ProcessOptions{
		Name: "embed", Path: testenv.Binary(t, "./examples/embed"), DropEnv: []string{"HERALD_"},
		Env: []string{
			"HERALD_MYSQL_DSN=" + d.DSN, "HERALD_KAFKA_BROKERS=" + strings.Join(brokers, ","),
			"HERALD_EMBED_TOPIC=" + topic, "HERALD_EMBED_METRICS_ADDR=127.0.0.1:0",
		},
	})

	var eventID string
	testenv.WaitFor(t, time.Minute, "the example's event", func() (bool, string) {
		if p.Exited() {
			t.Fatalf("the example exited: %v\n%s", p.Exit(), p.Tail(20))
		}
		eventID = logField(p.Log(), "event added", "event_id")
		return eventID != "", "no \"event added\" log yet"
	})
	testenv.WaitFor(t, time.Minute, "the event on the topic", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		records, err := verify.ReadTopic(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range records {
			if r.EventID() == eventID {
				return r.Key == "9182", "record key " + r.Key + ", want the aggregate id 9182"
			}
		}
		return false, "not on the topic yet"
	})
	testenv.Eventually(t, time.Minute, "the event marked published", func() bool {
		return len(testenv.Strings(t, d.DB, "SELECT id FROM outbox_events WHERE id = ? AND published_at IS NOT NULL", eventID)) == 1
	})

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit := p.Wait(t, 30*time.Second); exit.Code != 0 {
		t.Fatalf("after SIGTERM: %v, want exit code 0\n%s", exit, p.Tail(20))
	}
	out := p.Log()
	if !strings.Contains(out, "relay stopped") {
		t.Errorf("no clean stop logged:\n%s", out)
	}
	if strings.Contains(out, d.DSN) || strings.Contains(out, "herald:herald@") {
		t.Errorf("the logs show the DSN:\n%s", out)
	}
}

// logField returns key of the first JSON log line with message msg, or "".
func logField(log, msg, key string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			v, _ := line[key].(string)
			return v
		}
	}
	return ""
}
