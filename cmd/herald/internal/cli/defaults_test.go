package cli

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestRelayRunsOnItsDefaults starts `herald relay` as a process with no
// setting at all but its source, poll (the default, so no flag) and then
// binlog: no --database-url, no variable (the test's HERALD_* are not
// inherited). Each must become ready on its default metrics address and
// publish an event written to the default database to the default route's
// topic, read back by kcat. `herald migrate up`, `herald topics create`,
// `herald status` and `herald quarantine list` run on their defaults too.
// Before, --source binlog stopped at start
// with "binlog reader config: DSN: names no database": the stream's
// reader was given the --database-url flag's value, empty unless given.
func TestRelayRunsOnItsDefaults(t *testing.T) {
	brokers := testenv.KafkaBrokers(t) // fails (or skips under -short) without the stack
	if slices.Compare(brokers, []string{localstack.KafkaBrokersDefault}) != 0 || localstack.MySQLDSN() != localstack.MySQLDSNDefault {
		t.Skip("HERALD_KAFKA_BROKERS or HERALD_MYSQL_DSN name other servers than the defaults this test is about")
	}
	testenv.LockStackDefaults(t)
	bin := testenv.HeraldBinary(t)
	herald := func(args ...string) *testenv.Process {
		return testenv.StartProcess(t, testenv.ProcessOptions{Name: "herald " + strings.Join(args, " "),
			Path: bin, Args: args, DropEnv: []string{"HERALD_"}})
	}
	for _, args := range [][]string{{"migrate", "up"}, {"topics", "create", relay.TopicsDefault["order"], "--allow-differences"}} {
		p := herald(args...)
		if exit := p.Wait(t, 2*time.Minute); exit.Code != 0 {
			t.Fatalf("herald %v: %v\n%s", args, exit, p.Log())
		}
	}
	topic := relay.TopicsDefault["order"]
	adm := testenv.NewAdmin(t, brokers)
	testenv.WaitFor(t, 30*time.Second, "topic "+topic+" with a leader for every partition", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := kafka.DescribeTopics(ctx, adm, topic)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range d[0].Partitions {
			if p.Leader < 0 {
				return false, fmt.Sprintf("partition %d has no leader", p.Partition)
			}
		}
		return true, ""
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, _, err := database.Open(ctx, localstack.MySQLDSNDefault, database.ConnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, source := range []string{sourcePoll, sourceBinlog} {
		t.Run(source, func(t *testing.T) {
			var args []string
			if source != sourcePoll {
				args = []string{"--source", source}
			}
			p := herald(append([]string{"relay"}, args...)...)
			readyz := "http://" + MetricsAddrDefault + "/readyz"
			testenv.WaitFor(t, time.Minute, "herald relay ready at "+readyz, func() (bool, string) {
				if p.Exited() {
					t.Fatalf("herald relay %v exited: %v\n%s", args, p.Exit(), p.Log())
				}
				resp, err := http.Get(readyz)
				if err != nil {
					return false, err.Error()
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK, resp.Status
			})

			ids := testenv.AddEvents(t, db, testenv.OrderEvents("defaults-"+source+"-"+fmt.Sprint(time.Now().UnixNano()))...)
			waitPublished(t, db, ids[0])
			testenv.WaitFor(t, 30*time.Second, "event "+ids[0]+" on "+topic+" (kcat)", func() (bool, string) {
				rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				records, err := verify.ReadTopic(rctx, brokers, topic)
				if err != nil {
					return false, err.Error()
				}
				for _, r := range records {
					if r.EventID() == ids[0] {
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d records, not the event", len(records))
			})

			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if exit := p.Wait(t, time.Minute); exit.Code != 0 {
				t.Errorf("herald relay %v after SIGTERM: %v", args, exit)
			}
		})
	}
	// The operators' commands find the same database, brokers and topic.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--json"}, `"topic": "` + topic + `"`},
		{[]string{"quarantine", "list"}, "quarantined event(s)"},
	} {
		p := herald(c.args...)
		if exit := p.Wait(t, time.Minute); exit.Code != 0 || !strings.Contains(p.Log(), c.want) {
			t.Errorf("herald %v on the defaults: %v, want exit 0 and %q\n%s", c.args, exit, c.want, p.Log())
		}
	}
}

// waitPublished waits until event id is marked published in db (MariaDB).
func waitPublished(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, "event "+id+" published", func() (bool, string) {
		var published bool
		if err := db.QueryRow("SELECT "+verify.PublishedSQL+" FROM outbox_events WHERE id = ?", id).Scan(&published); err != nil {
			return false, err.Error()
		}
		return published, "not yet"
	})
}
