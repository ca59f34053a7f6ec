package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestRowsForeignWritersGotWrong, on a real relay and Kafka: rows inserted
// with plain SQL that herald cannot publish (issue 21, defect 2) are each
// quarantined at once with class encode, logged and counted, while every
// other event, of other aggregates and of the same batch, is published;
// their successors wait behind them; status, quarantine list, show (with
// the stored value) and discard work on them. A row carrying headers in
// herald's reserved prefix is published with herald's headers only (defect
// 3), read back from the topic.
func TestRowsForeignWritersGotWrong(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) { testForeignRows(t, server, false) })
}

// TestRowsForeignWritersGotWrongStreamed is the same through a binlog
// relay, the rows inserted while it streams: the stream decodes them as
// the claim does and goes on.
func TestRowsForeignWritersGotWrongStreamed(t *testing.T) {
	testForeignRows(t, testenv.MariaDB, true)
}

// foreignRow is a row as a foreign writer inserts it.
type foreignRow struct {
	id, aggregateID string
	seq, version    int
	payload         string
	headers         any // nil: NULL
	checksOff       bool
}

func testForeignRows(t *testing.T, server testenv.Server, streamed bool) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	ctx := context.Background()
	insert := func(r foreignRow) {
		t.Helper()
		query := `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
			payload, headers, occurred_at, next_attempt_at)
			VALUES (?, 'order', ?, ?, 'order.created', ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`
		if server == testenv.PostgreSQL {
			query = `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
				payload, headers, occurred_at, next_attempt_at)
				VALUES ($1, 'order', $2, $3, 'order.created', $4, $5, $6, statement_timestamp(), statement_timestamp())`
		}
		conn, err := d.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if r.checksOff {
			if _, err := conn.ExecContext(ctx, "SET SESSION check_constraint_checks = 0"); err != nil {
				t.Fatal(err)
			}
			defer conn.ExecContext(ctx, "SET SESSION check_constraint_checks = 1")
		}
		if _, err := conn.ExecContext(ctx, query, r.id, r.aggregateID, r.seq, r.version, r.payload, r.headers); err != nil {
			t.Fatalf("insert %+v: %v", r, err)
		}
	}

	var logs testenv.LogBuffer
	obs := &failureCounter{}
	cfg := relay.Config{ID: "foreign-rows", Topics: map[string]string{"order": topic}, Lease: 15 * time.Second,
		PollInterval: 50 * time.Millisecond, Observer: obs,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if streamed {
		src, err := binlog.NewSource(ctx, d.DB, binlog.Config{DSN: d.DSN, Config: changestream.Config{Logger: cfg.Logger}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Stream = src
	}
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, DeliveryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	st := d.Store()
	r, err := relay.New(cfg, st, producer)
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
	if streamed {
		testenv.Eventually(t, time.Minute, "the relay streaming (a checkpoint written)", func() bool {
			return d.Count(t, "SELECT COUNT(*) FROM outbox_stream WHERE position IS NOT NULL AND position <> ''") == 1
		})
	}

	w, err := outbox.NewWriter(outbox.Config{Dialect: d.Dialect})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := w.Add(ctx, tx, testenv.OrderEvents("g1", "g2", "g1", "g3", "g4", "g2")...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// Since migration 6 the table's trigger refuses every bad row below
	// (migrations' TestBadRowsAreRefused): dropped, as on a table migrated
	// before it, the rows go in as they are, and herald must still cope.
	dropTrigger := "DROP TRIGGER outbox_events_before_insert"
	if server == testenv.PostgreSQL {
		dropTrigger += " ON outbox_events"
	}
	d.Exec(t, dropTrigger)

	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	// Bad rows the server takes, each heading its aggregate, and the
	// column their defect names.
	type badRow struct {
		foreignRow
		column    string
		successor string
	}
	bad := []badRow{
		{foreignRow{id: newID(), aggregateID: "b-value", seq: 1, version: 1, payload: `{}`, headers: `{"tenant":1}`}, "headers", ""},
		{foreignRow{id: newID(), aggregateID: "b-array", seq: 1, version: 1, payload: `{}`, headers: `["tenant"]`}, "headers", ""},
		{foreignRow{id: newID(), aggregateID: "", seq: 1, version: 1, payload: `{}`}, "aggregate_id", ""},
	}
	if server == testenv.MariaDB {
		bad = append(bad,
			badRow{foreignRow{id: newID(), aggregateID: "b-nul", seq: 1, version: 1, payload: `{}`, headers: `{"tenant":"a\u0000"}`}, "headers", ""},
			badRow{foreignRow{id: newID(), aggregateID: "b-json", seq: 1, version: 1, payload: `{}`, headers: `{"tenant":`, checksOff: true}, "headers", ""},
			badRow{foreignRow{id: newID(), aggregateID: "b-payload", seq: 1, version: 1, payload: `not json`, checksOff: true}, "payload", ""},
			badRow{foreignRow{id: newID(), aggregateID: "b-version", seq: 1, version: 0, payload: `{}`}, "schema_version", ""},
			badRow{foreignRow{id: "not-a-uuid", aggregateID: "b-id", seq: 1, version: 1, payload: `{}`}, "id", ""})
	}
	for i := range bad {
		insert(bad[i].foreignRow)
		if bad[i].aggregateID != "" { // a valid successor, which must wait
			bad[i].successor = newID()
			insert(foreignRow{id: bad[i].successor, aggregateID: bad[i].aggregateID, seq: 2, version: 1, payload: `{"n":2}`})
		}
	}
	reserved := newID()
	insert(foreignRow{id: reserved, aggregateID: "reserved", seq: 1, version: 1, payload: `{"n":1}`,
		headers: `{"herald-event-id":"not-a-uuid","Herald-Aggregate-Seq":"99","tenant":"acme"}`})
	published := len(good) + 1
	var successors []string
	for _, b := range bad {
		if b.successor != "" {
			successors = append(successors, b.successor)
		}
	}

	testenv.WaitFor(t, time.Minute, "the bad rows quarantined, their successors held, the rest published", func() (bool, string) {
		b, err := st.ReadBacklog(ctx)
		if err != nil {
			return false, err.Error()
		}
		n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE "+verify.PublishedSQL)
		return b.Quarantined == int64(len(bad)) && b.Held == int64(len(successors)) && n == published,
			fmt.Sprintf("%d quarantined (want %d), %d held (want %d), %d published (want %d)",
				b.Quarantined, len(bad), b.Held, len(successors), n, published)
	})
	for _, b := range bad {
		if n := d.Count(t, `SELECT COUNT(*) FROM outbox_events WHERE id = ? AND quarantined_at IS NOT NULL
			AND error_class = 'encode' AND last_error LIKE ?`, b.id, "%column "+b.column+" %"); n != 1 {
			t.Errorf("bad row %s (%s): not quarantined as encode with a last_error naming column %s", b.id, b.aggregateID, b.column)
		}
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox_failures WHERE event_id = ? AND error_class = 'encode' AND quarantined", b.id); n != 1 {
			t.Errorf("bad row %s: %d encode failure records, want 1", b.id, n)
		}
	}
	if n := obs.count(kafka.ClassEncode); n != len(bad) {
		t.Errorf("observer counted %d encode quarantines, want %d", n, len(bad))
	}
	if got := logs.String(); !strings.Contains(got, `"msg":"publish failed"`) || !strings.Contains(got, `"error_class":"encode"`) {
		t.Errorf("no encode failure in the relay's log:\n%s", got)
	}
	if got := logs.String(); !strings.Contains(got, "reserved prefix") || !strings.Contains(got, reserved) {
		t.Errorf("the dropped reserved headers were not logged:\n%s", got)
	}

	// The reserved row's record carries herald's headers once each, the
	// event's own header, and nothing of the stored herald-* ones.
	records := readRecords(t, brokers, topic, published)
	var found bool
	for _, rec := range records {
		for _, b := range bad {
			if string(rec.Key) == b.aggregateID && b.aggregateID != "" {
				t.Errorf("a record of aggregate %s, whose head is quarantined, reached the topic", b.aggregateID)
			}
		}
		counts, values := map[string]int{}, map[string]string{}
		for _, h := range rec.Headers {
			counts[strings.ToLower(h.Key)]++
			values[h.Key] = string(h.Value)
		}
		for name, n := range counts {
			if envelope.IsReservedHeader(name) && n != 1 {
				t.Errorf("record %s carries %d %s headers", values[envelope.HeaderEventID], n, name)
			}
		}
		if values[envelope.HeaderEventID] != reserved {
			continue
		}
		found = true
		if values[envelope.HeaderAggregateSeq] != "1" || values["tenant"] != "acme" || values["Herald-Aggregate-Seq"] != "" {
			t.Errorf("the reserved row's record has headers %v, want herald's (seq 1) and tenant=acme only", values)
		}
	}
	if !found {
		t.Errorf("the reserved row's record is not in the topic")
	}

	dsn := "--database-url=" + d.DSN
	out, code := run(t, "status", dsn, "--json", "--kafka-brokers="+strings.Join(brokers, ","), "--topic", "order="+topic)
	var rep statusReport
	decodeFirst(t, out, &rep)
	if code != 0 || rep.Backlog.Quarantined != int64(len(bad)) || rep.Backlog.FailuresLastHour[kafka.ClassEncode] != int64(len(bad)) ||
		len(rep.Quarantined) != len(bad) {
		t.Errorf("status: exit %d, %+v; want the %d bad rows quarantined and counted as encode failures\n%s", code, rep, len(bad), out)
	}
	out, code = run(t, "quarantine", "list", dsn, "--class", kafka.ClassEncode)
	for _, b := range bad {
		if code != 0 || !strings.Contains(out, b.id) {
			t.Errorf("quarantine list --class encode: exit %d, lacks %s\n%s", code, b.id, out)
		}
	}
	for _, b := range bad {
		out, code := run(t, "quarantine", "show", dsn, b.id)
		var shown store.EventDetail
		if code == 0 {
			decodeFirst(t, out, &shown)
		}
		if code != 0 || shown.Defect == nil || shown.Defect.Column != b.column {
			t.Errorf("quarantine show %s: exit %d, defect %+v; want the defect of column %s\n%s", b.id, code, shown.Defect, b.column, out)
			continue
		}
		if s, ok := b.headers.(string); ok && b.column == "headers" && !strings.Contains(shown.Defect.Stored, "tenant") {
			t.Errorf("quarantine show %s: stored %q, want the stored headers %s", b.id, shown.Defect.Stored, s)
		}
		if out, code := run(t, "quarantine", "discard", dsn, "--reason", "written by hand", b.id); code != 0 {
			t.Errorf("quarantine discard %s: exit %d\n%s", b.id, code, out)
		}
	}
	testenv.Eventually(t, time.Minute, "the successors of the discarded rows published", func() bool {
		return d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE "+verify.PublishedSQL) == published+len(successors)
	})
}

// readRecords reads n records of topic from its start.
func readRecords(t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// failureCounter is a relay.Observer that counts quarantines by class.
type failureCounter struct {
	mu          sync.Mutex
	quarantined map[string]int
}

func (c *failureCounter) Claimed(store.Claim)               {}
func (c *failureCounter) Published(string, int32, int)      {}
func (c *failureCounter) PublishedBatch(time.Duration, int) {}
func (c *failureCounter) Settled(store.Settled)             {}
func (c *failureCounter) Failed(class string, quarantined bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if quarantined {
		if c.quarantined == nil {
			c.quarantined = map[string]int{}
		}
		c.quarantined[class]++
	}
}

func (c *failureCounter) count(class string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quarantined[class]
}
