package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/testkit/testenv"
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
		var rep status.Report
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

// TestStatusOnAnEmptyDatabase: a fresh database and a topic not created
// yet: status names the missing topic and what to do, exits 0, and
// --json lists it (it printed "end offset of orders.v1/-1" and exited 1).
func TestStatusOnAnEmptyDatabase(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	missing := "herald-never-created-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []string{"status", "--mysql-dsn=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ","), "--topics", missing}
	out, code := run(t, args...)
	if code != 0 || strings.Contains(out, "/-1") || !strings.Contains(out, missing+"  no such topic") ||
		!strings.Contains(out, "herald topics create "+missing) {
		t.Errorf("status: exit %d, want 0 and the missing topic named with its remedy\n%s", code, out)
	}
	out, code = run(t, append(args, "--json")...)
	var rep status.Report
	decodeFirst(t, out, &rep)
	if code != 0 || len(rep.MissingTopics) != 1 || rep.MissingTopics[0] != missing || rep.KafkaError != "" {
		t.Errorf("status --json: exit %d, missing_topics %v, kafka_error %q\n%s", code, rep.MissingTopics, rep.KafkaError, out)
	}
}

// TestStatusJSONWithoutASchema: --json on a database herald's migrations
// never ran on prints a JSON object with the error (it printed nothing on
// stdout), and exits 1.
func TestStatusJSONWithoutASchema(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, s testenv.Server) {
		d := testenv.NewDatabaseOn(t, s)
		out, code := run(t, "status", "--json", "--database-url="+d.DSN, "--kafka-brokers=127.0.0.1:1")
		var got status.Error
		decodeFirst(t, out, &got)
		if code != 1 || !strings.Contains(got.Error, "migrat") || got.At.IsZero() {
			t.Errorf("exit %d, JSON %+v; want exit 1 and an error object saying the schema is missing\n%s", code, got, out)
		}
	})
}

// TestStatusShowsConfigurationStops (issue 21, defect 6): while a Kafka
// configuration failure stops a relay, status and the backlog gauge report
// the events as old as they are, and status says what stops them. Real
// failures on the stack's SASL_SSL listener: an ACL that denies the topic
// (events released at every round with error_class authorization and
// next_attempt_at reset, which the age was measured from), and a wrong
// password (nothing claimed). The events occurred 10 minutes before they
// were written, so an age counted from the insert or the last release
// reads seconds.
func TestStatusShowsConfigurationStops(t *testing.T) {
	k := testenv.StackKafka(t)
	const age = 10 * time.Minute
	tests := []struct {
		name     string
		prefix   string // of the topic: the ACLs allow only "herald"
		password string
		class    string // of the relay's configuration failure
		stopped  bool   // events carry the class: status lists them
	}{
		{"topic write denied by an ACL", "denied-s-", testenv.StackKafkaPassword, kafka.ClassAuthorization, true},
		{"wrong SASL password", "herald-s-", "not-the-password", kafka.ClassAuthentication, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
				d := testenv.NewHeraldDatabaseOn(t, server)
				brokers := testenv.KafkaBrokers(t)
				topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3, Prefix: tt.prefix})
				events := testenv.OrderEvents("a", "b", "c", "a", "b", "c")
				for i := range events {
					events[i].OccurredAt = time.Now().Add(-age)
				}
				d.AddEvents(t, events...)
				sec := k.SCRAM(kafka.SASLScramSHA512)
				sec.SASLPassword, sec.SASLPasswordFile = "", testenv.WriteSecret(t, "kafka-password", tt.password)
				relay := testenv.StartRelay(t, testenv.RelayOptions{
					Name: "relay-stopped", DSN: d.DSN, Brokers: k.SASLBrokers, Topics: map[string]string{"order": topic},
					Env: append(kafka.SecurityEnv(sec), "HERALD_BACKLOG_INTERVAL=200ms", "HERALD_BACKOFF_BASE=100ms"),
				})
				relay.WaitForMetric(t, "herald_relay_configuration_failure", time.Minute, "a configuration failure reported",
					func(v float64) bool { return v == 1 })
				// The aggregates' heads carry the class; their successors
				// were given back behind them (held, and ready again).
				heads := int64(len(events) / 2)
				if tt.stopped {
					testenv.WaitFor(t, 30*time.Second, "events released with their class", func() (bool, string) {
						n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE error_class = '"+tt.class+"'")
						return int64(n) == heads, fmt.Sprintf("%d of %d heads with error_class %s", n, heads, tt.class)
					})
				}
				// The gauge, sampled after the releases above.
				testenv.WaitFor(t, 30*time.Second, "the claimable age gauge counting from the events' creation", func() (bool, string) {
					v, err := gauge(relay, `herald_outbox_oldest_age_seconds{state="claimable"}`)
					return err == nil && v >= (age-time.Minute).Seconds(), fmt.Sprintf("%v (%v)", v, err)
				})

				args := []string{"status", "--database-url=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ","), "--topics", topic}
				out, code := run(t, append(args, "--json")...)
				var rep status.Report
				decodeFirst(t, out, &rep)
				if code != 0 || rep.Backlog.Ready != int64(len(events)) || rep.Backlog.OldestReadyAge < age-time.Minute {
					t.Errorf("status --json: exit %d, ready %d, oldest ready age %v; want %d events about %v old\n%s",
						code, rep.Backlog.Ready, rep.Backlog.OldestReadyAge, len(events), age, out)
				}
				text, _ := run(t, args...)
				if tt.stopped {
					want := []status.ConfigurationStop{{Class: tt.class, Events: heads}}
					got := rep.ConfigurationStops
					if len(got) != 1 || got[0].Class != want[0].Class || got[0].Events != want[0].Events || got[0].OldestAge < age-time.Minute {
						t.Errorf("configuration stops %+v, want %s: %d events about %v old", got, tt.class, heads, age)
					}
					if !strings.Contains(text, "STOPPED BY KAFKA CONFIGURATION") || !strings.Contains(text, "  "+tt.class+"  ") ||
						!strings.Contains(text, "none charged to events") {
						t.Errorf("status does not show the stop:\n%s", text)
					}
				} else if len(rep.ConfigurationStops) != 0 {
					t.Errorf("configuration stops %+v: the relay claimed nothing, so no event carries a class", rep.ConfigurationStops)
				}
				if line := lineWith(text, "ready (claimable)"); !strings.Contains(line, " 10m") {
					t.Errorf("ready line %q: want the events' age, about 10m", line)
				}
			})
		})
	}
}

// lineWith returns the first line of text containing substr.
func lineWith(text, substr string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			return line
		}
	}
	return ""
}

// gauge scrapes one series of a relay's /metrics, named with its labels
// as the exposition writes them.
func gauge(p *testenv.Process, series string) (float64, error) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + p.MetricsAddr() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no series %s", series)
}
