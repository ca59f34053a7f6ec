// Package consumers_test runs the Python consumer of docs/consumers.md
// (examples/consumers/python) against the real stack: killed mid-batch,
// restarted, then handed every event a second time by a replay of the
// topic; its effect table must show each event applied exactly once.
package consumers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// venvPython is the virtualenv stack/writers.sh made (confluent-kafka, and
// Debian's psycopg2 and PyMySQL).
func venvPython(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("HERALD_CACHE_DIR")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "herald")
	}
	py := filepath.Join(cache, "writers", "python", "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the python consumer's virtualenv is missing (%v): run `make up` (stack/writers.sh)", err)
	}
	return py
}

// consumerEnv is how run_consumer.py reaches d.
func consumerEnv(t *testing.T, d *testenv.Database) []string {
	t.Helper()
	if d.Server == testenv.PostgreSQL {
		u, err := url.Parse(d.DSN)
		if err != nil {
			t.Fatal(err)
		}
		password, _ := u.User.Password()
		return []string{"CONSUMER_DB=postgres", "CONSUMER_HOST=" + u.Hostname(), "CONSUMER_PORT=" + u.Port(),
			"CONSUMER_USER=" + u.User.Username(), "CONSUMER_PASSWORD=" + password, "CONSUMER_DATABASE=" + strings.TrimPrefix(u.Path, "/")}
	}
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(cfg.Addr, ":")
	return []string{"CONSUMER_DB=mysql", "CONSUMER_HOST=" + host, "CONSUMER_PORT=" + port, "CONSUMER_USER=" + cfg.User,
		"CONSUMER_PASSWORD=" + cfg.Passwd, "CONSUMER_DATABASE=" + cfg.DBName}
}

// line is one line run_consumer.py prints per event.
type line struct {
	EventID string `json:"event_id"`
	Applied *bool  `json:"applied"`
}

// seen parses what p printed: how many events it applied and how many it
// found applied before.
func seen(t *testing.T, p *testenv.Process) (applied, duplicates int) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(p.Log()))
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Applied == nil {
			continue // the start line, or a log line of librdkafka's
		}
		if *l.Applied {
			applied++
		} else {
			duplicates++
		}
	}
	return applied, duplicates
}

const (
	events       = 60 // over 20 orders, on 3 partitions
	killAfter    = 15 // effects applied before the failpoint kills the first run
	consumerName = "order-effects"
)

// TestPythonConsumerAppliesEachEventOnce: the Python consumer, on each
// database, is killed (SIGKILL, at its failpoint) right after its 15th
// effect committed and before its batch's offsets were; a restart in the
// same group gets that batch again and skips what the inbox holds; a
// replay (a new group, from the beginning) delivers all 60 events once
// more, and every one is a duplicate. The effect table holds each event
// exactly once, the inbox one row per event, and the group's offsets are
// committed to the end of the topic.
func TestPythonConsumerAppliesEachEventOnce(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	py := venvPython(t)
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		outboxDB := testenv.NewHeraldDatabaseOn(t, server)
		consumerDB := testenv.NewHeraldDatabaseOn(t, server) // consumed_events is herald's migration 2
		ddl, err := os.ReadFile(map[testenv.Server]string{testenv.MariaDB: "effects.mysql.sql", testenv.PostgreSQL: "effects.postgres.sql"}[server])
		if err != nil {
			t.Fatal(err)
		}
		consumerDB.Exec(t, string(ddl))
		topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})

		var want []string
		for tx := range events / 10 {
			batch := make([]outbox.Event, 10)
			for i := range batch {
				n := tx*10 + i
				batch[i] = outbox.Event{AggregateType: "order", AggregateID: fmt.Sprint(n%20 + 1), EventType: "order.updated",
					SchemaVersion: 1, Payload: json.RawMessage(fmt.Sprintf(`{"order_id":%d,"n":%d}`, n%20+1, n))}
			}
			want = append(want, outboxDB.AddEvents(t, batch...)...)
		}
		relay := testenv.StartRelay(t, testenv.RelayOptions{Name: "relay", DSN: outboxDB.DSN, Brokers: brokers,
			Topics: map[string]string{"order": topic}})
		testenv.WaitFor(t, time.Minute, "every event published", func() (bool, string) {
			n := outboxDB.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE NOT "+verify.PublishedSQL)
			return n == 0, fmt.Sprintf("%d unpublished", n)
		})
		relay.Kill(t)

		start := func(name, group string, extra ...string) *testenv.Process {
			env := append(consumerEnv(t, consumerDB), "KAFKA_BROKERS="+strings.Join(brokers, ","), "CONSUMER_TOPIC="+topic,
				"CONSUMER_GROUP="+group, "CONSUMER_NAME="+consumerName, "CONSUMER_BATCH=10", "PYTHONDONTWRITEBYTECODE=1")
			return testenv.StartProcess(t, testenv.ProcessOptions{Name: name, Path: py, Args: []string{"python/run_consumer.py"},
				Env: append(env, extra...)})
		}
		effects := func() int { return consumerDB.Count(t, "SELECT COUNT(*) FROM order_effects") }
		group := "herald-t-consumer-" + string(server) + "-" + topic

		first := start("consumer-killed", group, fmt.Sprintf("CONSUMER_KILL_AFTER=%d", killAfter))
		if exit := first.Wait(t, time.Minute); exit.Signal != syscall.SIGKILL {
			t.Fatalf("the first run ended with %v, want its failpoint's SIGKILL; log:\n%s", exit, first.Tail(20))
		}
		if n := effects(); n != killAfter {
			t.Fatalf("%d effects after the kill, want %d", n, killAfter)
		}

		restarted := start("consumer-restarted", group)
		testenv.WaitFor(t, time.Minute, "every event applied after the restart", func() (bool, string) {
			n := effects()
			return n >= events, fmt.Sprintf("%d effects; log:\n%s", n, restarted.Tail(5))
		})
		stop(t, restarted)
		applied, redelivered := seen(t, restarted)
		if applied != events-killAfter || redelivered < 1 {
			t.Errorf("the restarted run applied %d and skipped %d; want %d applied and the killed batch's applied events skipped",
				applied, redelivered, events-killAfter)
		}
		if end, committed := offsets(ctx, t, brokers, group, topic); committed != end {
			t.Errorf("group %s committed offsets summing to %d, the topic ends at %d", group, committed, end)
		}

		replay := start("consumer-replay", group+"-replay")
		testenv.WaitFor(t, time.Minute, "every event delivered again", func() (bool, string) {
			_, dups := seen(t, replay)
			return dups >= events, fmt.Sprintf("%d duplicates so far", dups)
		})
		stop(t, replay)
		if applied, _ := seen(t, replay); applied != 0 {
			t.Errorf("the replay applied %d events again", applied)
		}

		got := consumerDB.Strings(t, "SELECT CAST(event_id AS CHAR(36)) FROM order_effects")
		once := map[string]int{}
		for _, id := range got {
			once[id]++
		}
		for _, id := range want {
			if once[id] != 1 {
				t.Errorf("event %s has %d effects, want exactly 1", id, once[id])
			}
		}
		if len(got) != events {
			t.Errorf("%d effects, want %d", len(got), events)
		}
		if n := consumerDB.Count(t, "SELECT COUNT(*) FROM consumed_events WHERE consumer_name = ?", consumerName); n != events {
			t.Errorf("%d inbox rows, want %d", n, events)
		}
	})
}

// stop sends SIGTERM (the consumer finishes its batch and commits) and
// waits for a clean exit.
func stop(t *testing.T, p *testenv.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit := p.Wait(t, 30*time.Second); exit.Code != 0 {
		t.Fatalf("%s ended with %v; log:\n%s", p.Name, exit, p.Tail(20))
	}
}

// offsets returns the sum of topic's end offsets and of group's committed
// offsets on it.
func offsets(ctx context.Context, t *testing.T, brokers []string, group, topic string) (end, committed int64) {
	t.Helper()
	admin := testenv.NewAdmin(t, brokers)
	ends, err := admin.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { end += o.Offset })
	got, err := admin.FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	got.Each(func(o kadm.OffsetResponse) {
		if o.At > 0 {
			committed += o.At
		}
	})
	return end, committed
}
