package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestReplayIsRateLimitedKeepsIDsAndDeduplicates: 5,000 retained events
// replayed at 500/s take at least 9 s, land on the separate replay topic
// with their original ids and per-aggregate order, and an inbox consumer
// group reading the replay applies only the events its inbox had not seen.
func TestReplayIsRateLimitedKeepsIDsAndDeduplicates(t *testing.T) {
	d, brokers, live, replayTopic := newReplayEnv(t, 12)
	ctx := context.Background()

	const events, aggregates = 5000, 100
	w, _ := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
	var ids []string
	for batch := 0; batch < events/500; batch++ {
		tx, err := d.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		var es []outbox.Event
		for i := range 500 {
			n := batch*500 + i
			payload, _ := json.Marshal(contract.OrderCreatedV1{OrderID: int64(n%aggregates + 1), CustomerID: 1,
				Items: []contract.OrderItem{{SKU: "SKU-1", Quantity: 1, UnitPrice: "1.00"}}, TotalAmount: "1.00"})
			es = append(es, outbox.Event{AggregateType: "order", AggregateID: fmt.Sprint(n%aggregates + 1),
				EventType: contract.TypeOrderCreated, SchemaVersion: 1, Payload: payload})
		}
		got, err := w.Add(ctx, tx, es...)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	// Published long ago by a relay; half of them already applied by the
	// consumer before the replay.
	if _, err := d.DB.Exec("UPDATE outbox_events SET published_at = NOW(6)"); err != nil {
		t.Fatal(err)
	}
	const consumer = "replay-reader"
	for _, id := range ids[:events/2] {
		if _, err := d.DB.Exec("INSERT INTO consumed_events VALUES (?, ?, NOW(6))", consumer, id); err != nil {
			t.Fatal(err)
		}
	}

	args := []string{"replay", "--mysql-dsn=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ","),
		"--topic", "order=" + live, "--from", "1h", "--rate", "500", "--checkpoint", "test-replay"}
	start := time.Now()
	out, code := run(t, args...)
	elapsed := time.Since(start)
	if code != 0 {
		t.Fatalf("herald replay: exit %d\n%s", code, out)
	}
	t.Logf("replayed %d events in %v", events, elapsed)
	if elapsed < 9*time.Second {
		t.Errorf("5,000 events at 500/s took %v, want at least 9 s: the rate limit does not hold", elapsed)
	}
	if out, _ := run(t, args...); !strings.Contains(out, "0 event(s) this run") {
		t.Errorf("rerunning a finished replay produced again:\n%s", out)
	}

	records, err := verify.ReadTopic(ctx, brokers, replayTopic)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := verify.LoadOutbox(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records})
	if !rep.OK() || rep.Duplicates != 0 || len(records) != events {
		t.Errorf("replay topic: %d records; %s", len(records), rep)
	}
	if live, _ := verify.ReadTopic(ctx, brokers, live); len(live) != 0 {
		t.Errorf("the replay wrote %d records to the live topic", len(live))
	}

	c, err := inbox.New(inbox.Config{
		Dialect:      mysql.Dialect{},
		ConsumerName: consumer, Group: consumer + "-replay", Brokers: brokers, Topics: []string{replayTopic},
		DB: d.DB, Registry: contract.NewRegistry(), BatchSize: 50,
		Handler: inbox.HandlerFunc(func(context.Context, *sql.Tx, inbox.Message) error { return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	testenv.WaitFor(t, 2*time.Minute, "the consumer reading every replayed record", func() (bool, string) {
		s := c.Stats()
		return s.Processed+s.Duplicates >= events, fmt.Sprintf("%d of %d read", s.Processed+s.Duplicates, events)
	})
	if s := c.Stats(); s.Processed != events/2 || s.Duplicates != events/2 {
		t.Errorf("consumer applied %d and absorbed %d duplicates; want %d and %d", s.Processed, s.Duplicates, events/2, events/2)
	}
}

// TestReplayCheckpointKeepsItsRange: a checkpoint resumes the range it was
// started with. Rerunning the finished replay's command says it is already
// finished, with its range; the same checkpoint with another --from/--to
// (relative or absolute) is refused, naming both ranges, and publishes
// nothing.
func TestReplayCheckpointKeepsItsRange(t *testing.T) {
	d, brokers, live, replayTopic := newReplayEnv(t, 2)
	testenv.AddEvents(t, d.DB, testenv.OrderEvents("1", "2", "3")...)
	if _, err := d.DB.Exec("UPDATE outbox_events SET published_at = NOW(6)"); err != nil {
		t.Fatal(err)
	}
	replay := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append([]string{"replay", "--mysql-dsn=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ","),
			"--topic", "order=" + live, "--checkpoint", "range-test"}, args...)...)
	}

	if out, code := replay("--from", "1h"); code != 0 || !strings.Contains(out, "3 event(s) this run") {
		t.Fatalf("first replay: exit %d\n%s", code, out)
	}
	if out, code := replay("--from", "1h"); code != 0 || !strings.Contains(out, "already finished") ||
		!strings.Contains(out, "0 event(s) this run") {
		t.Errorf("the same command again: exit %d, want 0 and \"already finished\"\n%s", code, out)
	}
	for _, args := range [][]string{
		{"--from", "6h"},
		{"--from", "1h", "--to", "30m"},
		{"--from", time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)},
	} {
		out, code := replay(args...)
		if code != exitUsage || !strings.Contains(out, "range-test") || !strings.Contains(out, "different range") ||
			!strings.Contains(out, "new --checkpoint") {
			t.Errorf("replay %v with the finished checkpoint: exit %d, want %d saying the range differs\n%s", args, code, exitUsage, out)
		}
	}
	if records, err := verify.ReadTopic(context.Background(), brokers, replayTopic); err != nil || len(records) != 3 {
		t.Errorf("replay topic: %d records (%v), want the first run's 3 only", len(records), err)
	}
}

// TestReplayStopsWhenItsCheckpointCannotBeSaved: a checkpoint name the
// schema cannot hold is refused before anything is published; a user who
// may not write the checkpoint table publishes nothing; and a checkpoint
// that stops being writable mid-replay stops the replay with a message
// that says what a rerun will publish again, never "progress is saved".
func TestReplayStopsWhenItsCheckpointCannotBeSaved(t *testing.T) {
	d, brokers, live, replayTopic := newReplayEnv(t, 2)
	var aggs []string
	for i := range 1000 {
		aggs = append(aggs, fmt.Sprint(i%50))
	}
	testenv.AddEvents(t, d.DB, testenv.OrderEvents(aggs...)...)
	d.Exec(t, "UPDATE outbox_events SET published_at = NOW(6)")
	replay := func(dsn, checkpoint string) (string, int) {
		t.Helper()
		return run(t, "replay", "--mysql-dsn="+dsn, "--kafka-brokers="+strings.Join(brokers, ","),
			"--topic", "order="+live, "--from", "1h", "--rate", "100", "--checkpoint", checkpoint)
	}
	replayed := func() int {
		records, err := verify.ReadTopic(context.Background(), brokers, replayTopic)
		if errors.Is(err, verify.ErrUnknownTopic) {
			// Never created, or created by the replay a moment ago and not
			// yet known to the broker kcat asked: nothing on it either way.
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(records)
	}

	for _, name := range []string{strings.Repeat("n", 129), "two\nlines", " "} {
		if out, code := replay(d.DSN, name); code != exitUsage || !strings.Contains(out, "--checkpoint: ") {
			t.Errorf("--checkpoint %q: exit %d, want %d naming the flag\n%s", name, code, exitUsage, out)
		}
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM herald_replay_checkpoints"); n != 0 {
		t.Errorf("refused names left %d checkpoints", n)
	}

	user := "herald_ckpt_" + fmt.Sprint(time.Now().UnixNano()%1_000_000)
	testenv.MariaDBRoot(t, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'x'",
		"GRANT SELECT ON `"+d.Name+"`.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	dsn := strings.Replace(d.DSN, "herald:herald@", user+":x@", 1)
	out, code := replay(dsn, "read-only")
	if code != 1 || !strings.Contains(out, "replay checkpoint not saved") || strings.Contains(out, "progress is saved") {
		t.Errorf("replay by a user who may not save its checkpoint: exit %d\n%s", code, out)
	}
	if n := replayed(); n != 0 {
		t.Errorf("a replay whose checkpoint could not be saved published %d records", n)
	}

	// Writable at the start, not after the first pages.
	testenv.MariaDBRoot(t, "GRANT INSERT, UPDATE ON `"+d.Name+"`.herald_replay_checkpoints TO '"+user+"'@'127.0.0.1'")
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, code := replay(dsn, "revoked")
		done <- result{out, code}
	}()
	testenv.WaitFor(t, time.Minute, "a page saved", func() (bool, string) {
		n := d.Count(t, "SELECT COALESCE(MAX(replayed), 0) FROM herald_replay_checkpoints WHERE name = 'revoked'")
		return n > 0, fmt.Sprintf("%d replayed", n)
	})
	testenv.MariaDBRoot(t, "REVOKE INSERT, UPDATE ON `"+d.Name+"`.herald_replay_checkpoints FROM '"+user+"'@'127.0.0.1'")
	res := <-done
	if res.code != 1 || !strings.Contains(res.out, "replay checkpoint not saved") || !strings.Contains(res.out, "will be produced again") ||
		strings.Contains(res.out, "progress is saved") {
		t.Errorf("replay whose checkpoint became unwritable: exit %d\n%s", res.code, res.out)
	}
	saved := d.Count(t, "SELECT replayed FROM herald_replay_checkpoints WHERE name = 'revoked'")
	if n := replayed(); n <= saved || saved == 1000 {
		t.Errorf("%d records on the replay topic, %d saved: want the unsaved page beyond the checkpoint", n, saved)
	}
}

// newReplayEnv is a replay test's database, brokers, live topic of
// partitions, and the replay topic next to it (deleted when t ends).
func newReplayEnv(t *testing.T, partitions int32) (d *testenv.Database, brokers []string, live, replayTopic string) {
	t.Helper()
	d = testenv.NewHeraldDatabase(t)
	brokers = testenv.KafkaBrokers(t)
	live = testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: partitions})
	replayTopic = live + ".replay"
	admin := testenv.NewAdmin(t, brokers)
	t.Cleanup(func() { admin.DeleteTopic(context.Background(), replayTopic) })
	return d, brokers, live, replayTopic
}
