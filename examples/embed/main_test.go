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

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// TestEmbeddedRelayPublishes runs the example on a fresh database of each
// server (it applies herald's schema itself) and a fresh topic: the event
// it adds is read from the topic by kcat, an independent reader, and marked
// published in the outbox; SIGTERM then stops the service cleanly (exit 0)
// and its logs never show the DSN.
func TestEmbeddedRelayPublishes(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewDatabaseOn(t, server)
		brokers := testenv.KafkaBrokers(t)
		topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
		out := runEmbed(t, d, d.DSN, brokers, kafka.Security{}, topic, nil)
		if strings.Contains(out, d.DSN) || strings.Contains(out, "herald:herald@") {
			t.Errorf("the logs show the DSN:\n%s", out)
		}
	})
}

// TestEmbeddedRelayOverSecuredConnections: the same over the stack's
// secured servers: Kafka over SASL_SSL (SCRAM-SHA-512, the password in a
// file) and MariaDB as the user that must use TLS (its password in a
// file), from the HERALD_KAFKA_* and HERALD_MYSQL_* variables. kcat reads
// the event over the same listener; neither password shows in the logs.
func TestEmbeddedRelayOverSecuredConnections(t *testing.T) {
	k := testenv.StackKafka(t)
	d := testenv.NewDatabase(t)
	dsn, mysqlOpts := testenv.StackMySQLTLS(t, d.Name)
	topic := testenv.NewTopic(t, testenv.KafkaBrokers(t), testenv.TopicOptions{Partitions: 3})
	sec := k.SCRAM(kafka.SASLScramSHA512)
	sec.SASLPasswordFile, sec.SASLPassword = testenv.WriteSecret(t, "kafka-password", sec.SASLPassword), ""
	env := append(kafka.SecurityEnv(sec), database.ConnOptionsEnv(mysqlOpts)...)
	// kcat reads as the same user with PLAIN: Debian's librdkafka cannot
	// do SCRAM with Kafka 4 (see verify.KcatConfig).
	reader := k.SCRAM(kafka.SASLPlain)
	out := runEmbed(t, d, dsn, k.SASLBrokers, reader, topic, env)
	for _, secret := range []string{testenv.StackKafkaPassword, testenv.StackMySQLTLSPassword} {
		if strings.Contains(out, secret) {
			t.Errorf("the logs show a password:\n%s", out)
		}
	}
}

// runEmbed runs the example on d (reached with dsn) and brokers with the
// extra environment env, checks that the event it adds reaches topic
// (read by kcat with reader) and is marked published, stops it with
// SIGTERM, and returns its logs.
func runEmbed(t *testing.T, d *testenv.Database, dsn string, brokers []string, reader kafka.Security, topic string, env []string) string {
	t.Helper()
	p := testenv.StartProcess(t, testenv.ProcessOptions{
		Name: "embed", Path: testenv.Binary(t, "./examples/embed"), DropEnv: []string{"HERALD_"},
		Env: append([]string{
			"HERALD_DATABASE_URL=" + dsn, "HERALD_KAFKA_BROKERS=" + strings.Join(brokers, ","),
			"HERALD_EMBED_TOPIC=" + topic, "HERALD_EMBED_METRICS_ADDR=127.0.0.1:0",
		}, env...),
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
		records, err := verify.ReadSecuredTopic(ctx, brokers, reader, topic)
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
		return len(d.Strings(t, "SELECT id FROM outbox_events WHERE id = ? AND "+verify.PublishedSQL, eventID)) == 1
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
	return out
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
