package drill_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestRelayFailpointsFireWhereTheySay kills `herald relay` at each of its
// failpoints and looks at what it left behind at the moment it died: the
// batch its crash line lists is unpublished; at relay.after_claim and
// relay.before_publish nothing of it is on the topic yet, at
// relay.after_ack_before_mark all of it is (Kafka acknowledged, the mark
// never happened). A second relay then takes the dead relay's buckets over
// once its lease expires: nothing is lost, and only the acknowledged batch
// is duplicated.
func TestRelayFailpointsFireWhereTheySay(t *testing.T) {
	const (
		events     = 30
		aggregates = 10
		batch      = 10
		lease      = 2 * time.Second
	)
	tests := []struct {
		failpoint string
		// acked: the batch was on the topic when the relay died.
		acked bool
	}{
		{failpoint.RelayAfterClaim, false},
		{failpoint.RelayBeforePublish, false},
		{failpoint.RelayAfterAckBeforeMark, true},
	}
	for _, tt := range tests {
		t.Run(tt.failpoint, func(t *testing.T) {
			herald := filepath.Join(binDir(t), "herald")
			db := testenv.NewHeraldDatabase(t)
			brokers := testenv.KafkaBrokers(t)
			topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
			aggs := make([]string, events)
			for i := range aggs {
				aggs[i] = fmt.Sprint(1 + i%aggregates)
			}
			testenv.AddEvents(t, db.DB, testenv.OrderEvents(aggs...)...)
			relay := func(name, failpoints string) *testenv.Process {
				return testenv.StartProcess(t, testenv.ProcessOptions{
					Name: name, Path: herald, Args: []string{"relay"}, DropEnv: []string{"HERALD_"},
					Env: []string{
						"HERALD_MYSQL_DSN=" + db.DSN, "HERALD_KAFKA_BROKERS=" + strings.Join(brokers, ","),
						"HERALD_RELAY_ID=" + name, "HERALD_METRICS_ADDR=127.0.0.1:0", "HERALD_TOPICS=order=" + topic,
						"HERALD_LEASE=" + lease.String(), fmt.Sprintf("HERALD_BATCH_SIZE=%d", batch),
						"HERALD_FAILPOINTS=" + failpoints,
					},
				})
			}

			dying := relay("dying", tt.failpoint+"=crash")
			if exit := dying.Wait(t, time.Minute); exit.Signal != syscall.SIGKILL {
				t.Fatalf("relay ended with %v, want SIGKILL at %s\n%s", exit, tt.failpoint, dying.Tail(20))
			}
			if !strings.Contains(dying.Log(), "failpoint "+tt.failpoint+": crash") {
				t.Fatalf("relay died, but not at %s:\n%s", tt.failpoint, dying.Tail(20))
			}
			leased := failpoint.EventsAtCrash(dying.Log())
			if len(leased) != batch {
				t.Fatalf("the dead relay's crash line lists %d events in hand, want its batch of %d:\n%s", len(leased), batch, dying.Tail(5))
			}
			if n := len(testenv.Strings(t, db.DB, "SELECT id FROM outbox_events WHERE published_at IS NOT NULL")); n != 0 {
				t.Fatalf("%d events marked published: the relay got past %s", n, tt.failpoint)
			}
			records := readTopic(t, brokers, topic)
			onTopic := map[string]bool{}
			for _, r := range records {
				onTopic[r.EventID()] = true
			}
			switch {
			case tt.acked && len(records) != batch:
				t.Fatalf("%d records on the topic at the crash, want the acknowledged batch of %d", len(records), batch)
			case !tt.acked && len(records) != 0:
				t.Fatalf("%d records on the topic at the crash, want none: %s comes before any Kafka I/O", len(records), tt.failpoint)
			}
			for _, id := range leased {
				if tt.acked && !onTopic[id] {
					t.Errorf("leased event %s is not on the topic, yet the batch was acknowledged", id)
				}
			}

			// A supervisor's restart: another relay takes the dead one's
			// buckets over when its lease expires.
			rescuer := relay("rescuer", "")
			testenv.Eventually(t, time.Minute, "every event published", func() bool {
				return len(testenv.Strings(t, db.DB, "SELECT id FROM outbox_events WHERE published_at IS NULL")) == 0
			})
			if err := rescuer.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			rescuer.Wait(t, 30*time.Second)
			if !strings.Contains(rescuer.Log(), "took over buckets") {
				t.Errorf("the rescuer did not report taking the dead relay's buckets over:\n%s", rescuer.Tail(10))
			}
			rows, err := verify.LoadOutbox(context.Background(), db.DB)
			if err != nil {
				t.Fatal(err)
			}
			report := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: readTopic(t, brokers, topic)})
			if !report.OK() {
				t.Fatalf("after the takeover:\n%s", report)
			}
			wantDups := 0
			if tt.acked {
				wantDups = batch
			}
			if report.Duplicates != wantDups {
				t.Errorf("%d duplicates on the topic, want %d", report.Duplicates, wantDups)
			}
			published := map[string]bool{}
			for _, r := range rows {
				published[r.ID] = r.Published
			}
			for _, id := range leased {
				if !published[id] {
					t.Errorf("event %s the dead relay had in hand is not published", id)
				}
			}
		})
	}
}

func readTopic(t *testing.T, brokers []string, topic string) []verify.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, err := verify.ReadTopic(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
