package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/testenv"
)

// decodeFirst decodes the first JSON value of out (a command's output, which
// may go on with an error message).
func decodeFirst(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.NewDecoder(strings.NewReader(out)).Decode(v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestStatusShowsTheRelaysTopics: without --topics, status reads the
// topics a relay with the same routing settings publishes to: its --topic
// routes and --default-topic, or HERALD_TOPICS and HERALD_DEFAULT_TOPIC.
func TestStatusShowsTheRelaysTopics(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	routed := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	fallback := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	args := []string{"status", "--json", "--mysql-dsn=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ",")}

	topicsOf := func(out string) map[string]int {
		var rep statusReport
		decodeFirst(t, out, &rep)
		if rep.KafkaError != "" {
			t.Errorf("kafka error: %s", rep.KafkaError)
		}
		got := map[string]int{}
		for _, p := range rep.Partitions {
			got[p.Topic]++
		}
		return got
	}
	t.Setenv("HERALD_TOPICS", "order="+routed)
	t.Setenv("HERALD_DEFAULT_TOPIC", fallback)
	out, code := run(t, args...)
	if got := topicsOf(out); code != 0 || len(got) != 2 || got[routed] != 3 || got[fallback] != 2 {
		t.Errorf("status with HERALD_TOPICS and HERALD_DEFAULT_TOPIC: exit %d, partitions per topic %v; want %s: 3, %s: 2",
			code, got, routed, fallback)
	}
	out, code = run(t, append(args, "--topic", "invoice="+fallback, "--default-topic", "")...)
	if got := topicsOf(out); code != 0 || len(got) != 1 || got[fallback] != 2 {
		t.Errorf("status --topic invoice=%s: exit %d, partitions per topic %v", fallback, code, got)
	}
	out, code = run(t, append(args, "--topics", routed)...)
	if got := topicsOf(out); code != 0 || len(got) != 1 || got[routed] != 3 {
		t.Errorf("status --topics %s: exit %d, partitions per topic %v", routed, code, got)
	}
}

// TestStatusWithoutKafka: with Kafka unreachable, status still prints the
// database's part, says Kafka is unreachable, and exits 1; an empty
// quarantine is [] in JSON, not null.
func TestStatusWithoutKafka(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	args := []string{"status", "--mysql-dsn=" + d.DSN, "--kafka-brokers=127.0.0.1:1"}

	out, code := run(t, args...)
	if code != 1 || !strings.Contains(out, "OUTBOX BACKLOG") || !strings.Contains(out, "KAFKA: ") {
		t.Errorf("status: exit %d, want 1, the backlog and the Kafka error\n%s", code, out)
	}
	out, code = run(t, append(args, "--json")...)
	var rep map[string]json.RawMessage
	decodeFirst(t, out, &rep)
	if code != 1 || rep["backlog"] == nil || rep["kafka_error"] == nil {
		t.Errorf("status --json: exit %d, want 1 with the backlog and kafka_error\n%s", code, out)
	}
	if q := rep["quarantined"]; !bytes.Equal(q, []byte("[]")) {
		t.Errorf(`"quarantined": %s, want []`, q)
	}
}
