package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// dbzOutboxDDL is Debezium's outbox table as its documentation shapes it,
// plus a tenant column (an additional field) and the event's time.
var dbzOutboxDDL = map[testenv.Server]string{
	testenv.MariaDB: `CREATE TABLE outbox (id CHAR(36) NOT NULL PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
		aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON, tenant INT, created DATETIME(3))`,
	testenv.PostgreSQL: `CREATE TABLE outbox (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
		aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb, tenant integer, created timestamp(3))`,
}

// writeMapping writes a Debezium connector's configuration for the outbox
// table of d, routing every aggregate type to topic prefix+type, and
// returns its path.
func writeMapping(t *testing.T, d *testenv.Database, prefix string, extra ...string) string {
	t.Helper()
	lines := append([]string{
		"# the connector's configuration, as Kafka Connect takes it",
		"name=outbox-connector",
		"connector.class=io.debezium.connector.mariadb.MariaDbConnector",
		"database.hostname=db.example",
		"table.include.list=" + d.Name + ".outbox",
		"transforms=outbox",
		"transforms.outbox.type=io.debezium.transforms.outbox.EventRouter",
		"transforms.outbox.route.topic.replacement=" + prefix + "${routedByValue}",
		"transforms.outbox.table.fields.additional.placement=type:header:eventType,tenant:header",
		"transforms.outbox.table.field.event.timestamp=created",
	}, extra...)
	path := filepath.Join(t.TempDir(), "connector.properties")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestForeignOutboxTable: a table with Debezium's outbox columns, written
// by plain SQL (committed, rolled back, and inserted then deleted in one
// transaction as many Debezium users do), is relayed by herald in the
// debezium format after herald migrate up --mapping, by every source on
// both databases: every committed event once or more, with its payload
// byte for byte, the id, eventType and tenant headers and its time; no
// rolled-back one; per aggregate in order. herald migrate unmap then stops
// the copy.
func TestForeignOutboxTable(t *testing.T) {
	for _, tc := range []struct {
		server testenv.Server
		source string
	}{{testenv.MariaDB, sourcePoll}, {testenv.MariaDB, sourceBinlog}, {testenv.PostgreSQL, sourcePoll}, {testenv.PostgreSQL, sourceWAL}} {
		t.Run(fmt.Sprintf("%s/%s", tc.server, tc.source), func(t *testing.T) {
			t.Parallel()
			testForeignOutboxTable(t, tc.server, tc.source)
		})
	}
}

// foreignEvent is one row a foreign writer inserted.
type foreignEvent struct {
	id, aggregate, typ, payload string
	tenant                      int
	created                     time.Time
}

func testForeignOutboxTable(t *testing.T, server testenv.Server, source string) {
	ctx := context.Background()
	d := testenv.NewHeraldDatabaseOn(t, server)
	d.Exec(t, dbzOutboxDDL[server])
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3, Suffix: ".order"})
	mapping := writeMapping(t, d, strings.TrimSuffix(topic, "order"))
	dsn := "--database-url=" + d.DSN

	if out, code := run(t, "migrate", "up", dsn, "--mapping", mapping); code != 0 ||
		!strings.Contains(out, "inserts into outbox are copied into outbox_events by trigger herald_copy_outbox") ||
		!strings.Contains(out, "fields type, tenant") {
		t.Fatalf("migrate up --mapping: exit %d\n%s", code, out)
	}
	if out, code := run(t, "migrate", "status", dsn); code != 0 || !strings.Contains(out, "foreign table outbox: copied by trigger herald_copy_outbox") {
		t.Errorf("migrate status: exit %d\n%s", code, out)
	}
	if out, code := run(t, "status", dsn, "--kafka-brokers", strings.Join(brokers, ",")); code != 0 ||
		!regexp.MustCompile(`COPIED TABLES.*\n  outbox +herald_copy_outbox +20`).MatchString(out) {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	insert := d.SQL("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, tenant, created) VALUES (?, 'order', ?, ?, ?, ?, ?)")
	write := func(events []foreignEvent, commit, deleteInTx bool) {
		t.Helper()
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, e := range events {
			if _, err := tx.ExecContext(ctx, insert, e.id, e.aggregate, e.typ, e.payload, e.tenant, e.created); err != nil {
				t.Fatalf("insert %+v: %v", e, err)
			}
			if deleteInTx {
				if _, err := tx.ExecContext(ctx, d.SQL("DELETE FROM outbox WHERE id = ?"), e.id); err != nil {
					t.Fatal(err)
				}
			}
		}
		if commit {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var committed, rolledBack []foreignEvent
	created := time.Date(2026, 12, 4, 10, 12, 30, 123_000_000, time.UTC)
	newEvent := func(aggregate string, n int) foreignEvent {
		created = created.Add(time.Second)
		return foreignEvent{id: uuid.Must(uuid.NewV7()).String(), aggregate: aggregate, typ: "order." + strconv.Itoa(n),
			payload: fmt.Sprintf(`{"order_id": %q,  "n": %d, "note": "spacing kept"}`, aggregate, n), tenant: 40 + n, created: created}
	}

	relayArgs := []string{"--record-format", "debezium", "--mapping", mapping, "--source", source, "--lease", "5s"}
	rel := testenv.StartRelay(t, testenv.RelayOptions{Name: "foreign-" + source, DSN: d.DSN, Brokers: brokers, Args: relayArgs})
	if source != sourcePoll {
		testenv.WaitFor(t, time.Minute, "the relay streaming (a checkpoint written)", func() (bool, string) {
			if rel.Exited() {
				t.Fatalf("the relay exited: %v\n%s", rel.Exit(), rel.Tail(30))
			}
			return d.Count(t, "SELECT COUNT(*) FROM outbox_stream WHERE position IS NOT NULL AND position <> ''") == 1, rel.Tail(5)
		})
	}
	for round := 1; round <= 3; round++ {
		for _, agg := range []string{"a-" + strconv.Itoa(round%2), "b", "c"} {
			batch := []foreignEvent{newEvent(agg, round), newEvent(agg, round+10)}
			switch agg {
			case "b":
				write(batch, true, true) // inserted then deleted: only the copy remains
			default:
				write(batch, true, false)
			}
			committed = append(committed, batch...)
		}
		ghost := []foreignEvent{newEvent("c", 99)}
		write(ghost, false, false)
		rolledBack = append(rolledBack, ghost...)
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM outbox WHERE aggregateid = 'b'"); n != 0 {
		t.Fatalf("%d rows of aggregate b left in outbox; the writer deleted them", n)
	}

	records := readRecords(t, brokers, topic, len(committed))
	byID := map[string]*kgo.Record{}
	lastSeen := map[string]int{}
	position := map[string]int{} // an event's index among its aggregate's
	for i, e := range committed {
		position[e.id] = i
	}
	for _, rec := range records {
		id := header(rec, "id")
		if _, dup := byID[id]; dup {
			continue // a duplicate; first copies decide order
		}
		byID[id] = rec
		key := string(rec.Key)
		if p, ok := position[id]; ok {
			if prev, seen := lastSeen[key]; seen && prev > p {
				t.Errorf("aggregate %s: event %s reached the topic after a later one", key, id)
			}
			lastSeen[key] = p
		}
	}
	for _, e := range rolledBack {
		if _, ok := byID[e.id]; ok {
			t.Errorf("rolled-back event %s reached the topic", e.id)
		}
	}
	for _, e := range committed {
		rec, ok := byID[e.id]
		if !ok {
			t.Errorf("committed event %s (aggregate %s) is not on the topic", e.id, e.aggregate)
			continue
		}
		want := e.payload
		if server == testenv.PostgreSQL {
			// jsonb keeps no spacing: Debezium and herald both read its text.
			want = d.Strings(t, "SELECT CAST($1 AS jsonb)::text", e.payload)[0]
		}
		if string(rec.Key) != e.aggregate || string(rec.Value) != want || rec.Topic != topic {
			t.Errorf("event %s: topic %s key %q value %q; want %s, %q, %q", e.id, rec.Topic, rec.Key, rec.Value, topic, e.aggregate, want)
		}
		if got := headerList(rec); got != fmt.Sprintf("id=%s eventType=%s tenant=%d", e.id, e.typ, e.tenant) {
			t.Errorf("event %s: headers %s", e.id, got)
		}
		if !rec.Timestamp.Equal(e.created) {
			t.Errorf("event %s: record time %v, want the created column's %v", e.id, rec.Timestamp.UTC(), e.created)
		}
	}

	if source == sourcePoll && server == testenv.MariaDB {
		testReplayInDebeziumFormat(t, d, brokers, mapping, topic, byID, len(committed))
	}

	// Unmapped, the table's inserts stay the writer's own.
	rel.Signal(syscall.SIGTERM)
	rel.Wait(t, 30*time.Second)
	if out, code := run(t, "migrate", "unmap", dsn, "outbox"); code != 0 {
		t.Fatalf("migrate unmap: exit %d\n%s", code, out)
	}
	before := d.Count(t, "SELECT COUNT(*) FROM outbox_events")
	write([]foreignEvent{newEvent("d", 1)}, true, false)
	if after := d.Count(t, "SELECT COUNT(*) FROM outbox_events"); after != before {
		t.Errorf("after unmap, an insert into outbox was still copied (%d events, then %d)", before, after)
	}
	if out, code := run(t, "migrate", "unmap", dsn, "outbox"); code != exitUsage || !strings.Contains(out, "no foreign table mapping") {
		t.Errorf("a second unmap: exit %d, want %d naming no mapping\n%s", code, exitUsage, out)
	}
}

// header returns the value of rec's last header named key.
func header(rec *kgo.Record, key string) string {
	var v string
	for _, h := range rec.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}

// headerList renders rec's headers in order as name=value words.
func headerList(rec *kgo.Record) string {
	parts := make([]string, len(rec.Headers))
	for i, h := range rec.Headers {
		parts[i] = h.Key + "=" + string(h.Value)
	}
	return strings.Join(parts, " ")
}

// TestRecordFlagsRefused: bad record format settings stop herald relay
// (exit 2, before it connects) with every problem named by its flag, and
// herald migrate up --mapping with a configuration herald cannot honour
// changes nothing.
func TestRecordFlagsRefused(t *testing.T) {
	clearHeraldEnv(t)
	t.Setenv("HERALD_KAFKA_BROKERS", "127.0.0.1:1") // a case that got through meets no broker
	avro := filepath.Join(t.TempDir(), "avro.properties")
	if err := os.WriteFile(avro, []byte("table.include.list=app.outbox\nvalue.converter=io.confluent.connect.avro.AvroConverter\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"relay", "--record-format", "avro"}, []string{`--record-format: "avro": unknown record format "avro" (want herald, debezium, cloudevents)`}},
		{[]string{"relay", "--record-format", "herald,cloudevents"}, []string{"--record-format: two formats for every aggregate type (herald and cloudevents)"}},
		{[]string{"relay", "--record-format", "=debezium"}, []string{`--record-format: "=debezium": want format or aggregate_type=format`}},
		{[]string{"relay", "--record-format", "order=cloudevents", "--cloudevents-mode", "batch", "--cloudevents-source", " "},
			[]string{"--cloudevents-mode: ", "--cloudevents-source: "}},
		{[]string{"relay", "--record-format", "debezium", "--mapping", avro}, []string{"--mapping: value.converter: herald writes records as"}},
		{[]string{"relay", "--mapping", "/nonexistent/connector.properties"}, []string{"--mapping: open /nonexistent/connector.properties"}},
		{[]string{"relay", "--mapping-set", "novalue"}, []string{`--mapping-set: "novalue": want key=value`}},
		{[]string{"relay", "--record-format", "debezium", "--mapping-set", "route.topic.regex=(unclosed"},
			[]string{"--mapping: the Outbox Event Router's settings: RouteTopicRegex: "}},
		{[]string{"migrate", "up", "--mapping", avro}, []string{"--mapping: value.converter: herald writes records as"}},
		{[]string{"migrate", "up", "--mapping-set", "herald.table=outbox_events"}, []string{"--mapping: herald.table: \"outbox_events\" is one of herald's own tables"}},
	} {
		code, stdout, stderr := runMain(t, tt.args...)
		for _, want := range tt.wants {
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Errorf("herald %q: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", tt.args, code, exitUsage, want, stdout, stderr)
			}
		}
	}
}

// TestRelayRefusesAMappingNotInstalled: herald relay --mapping on a
// database whose copy of the table is missing, or copies other columns,
// stops at start saying to run herald migrate up --mapping.
func TestRelayRefusesAMappingNotInstalled(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	d.Exec(t, dbzOutboxDDL[testenv.MariaDB])
	mapping := writeMapping(t, d, "outbox.event.")
	brokers := "--kafka-brokers=" + strings.Join(testenv.KafkaBrokers(t), ",")
	out, code := run(t, "relay", "--database-url="+d.DSN, brokers, "--mapping", mapping, "--record-format", "debezium")
	if code != 1 || !strings.Contains(out, "nothing copies the inserts of table outbox into outbox_events yet") {
		t.Errorf("not installed: exit %d\n%s", code, out)
	}
	if out, code := run(t, "migrate", "up", "--database-url="+d.DSN, "--mapping", mapping, "--mapping-set",
		"transforms.outbox.table.fields.additional.placement=type:header:eventType"); code != 0 {
		t.Fatalf("migrate up: exit %d\n%s", code, out)
	}
	out, code = run(t, "relay", "--database-url="+d.DSN, brokers, "--mapping", mapping, "--record-format", "debezium")
	if code != 1 || !strings.Contains(out, "field tenant, which the installed copy does not copy") {
		t.Errorf("installed without tenant: exit %d\n%s", code, out)
	}
}

// testReplayInDebeziumFormat: herald replay in the relay's debezium format
// writes the live records again, byte for byte, to the live topic's
// replay topic (plus the replay's own header); without --aggregate-type it
// is refused, the topics being the aggregate types'.
func testReplayInDebeziumFormat(t *testing.T, d *testenv.Database, brokers []string, mapping, topic string, live map[string]*kgo.Record, n int) {
	t.Helper()
	args := []string{"replay", "--database-url=" + d.DSN, "--kafka-brokers=" + strings.Join(brokers, ","),
		"--record-format", "debezium", "--mapping", mapping, "--from", "1h", "--rate", "1000"}
	if out, code := run(t, append(args, "--checkpoint", "all")...); code != exitUsage || !strings.Contains(out, "replay one aggregate type at a time (--aggregate-type)") {
		t.Errorf("replay of every aggregate type in the debezium format: exit %d\n%s", code, out)
	}
	if out, code := run(t, append(args, "--checkpoint", "orders", "--aggregate-type", "order")...); code != 0 {
		t.Fatalf("replay --aggregate-type order: exit %d\n%s", code, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		testenv.NewAdmin(t, brokers).DeleteTopic(ctx, topic+".replay")
	})
	for _, rec := range readRecords(t, brokers, topic+".replay", n) {
		orig := live[header(rec, "id")]
		if orig == nil {
			t.Errorf("replayed record %s was never live", header(rec, "id"))
			continue
		}
		if string(rec.Key) != string(orig.Key) || string(rec.Value) != string(orig.Value) ||
			headerList(rec) != headerList(orig)+" herald-replay=orders" || !rec.Timestamp.Equal(orig.Timestamp) {
			t.Errorf("replayed %s: key %q value %q headers %s time %v; live: %q %q %s %v", header(rec, "id"), rec.Key, rec.Value,
				headerList(rec), rec.Timestamp, orig.Key, orig.Value, headerList(orig), orig.Timestamp)
		}
	}
}
