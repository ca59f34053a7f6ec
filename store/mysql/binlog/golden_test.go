package binlog_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/mysql/binlog"
)

// goldenEvents are events whose bytes are easy to get wrong: unicode,
// escapes, nesting, formatting the server must keep, headers, explicit
// times, and a payload of about 1 MiB.
func goldenEvents() []outbox.Event {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, (outbox.MaxPayloadBytesDefault-64)*3/4)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	large := `{"blob":"` + base64.StdEncoding.EncodeToString(raw) + `"}`
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("UTC+8", 8*3600))
	ev := func(agg, typ, payload string, headers map[string]string) outbox.Event {
		return outbox.Event{AggregateType: "order", AggregateID: agg, EventType: typ, SchemaVersion: 3,
			Payload: json.RawMessage(payload), Headers: headers}
	}
	// Each transaction's events (the first three, the last three) in
	// aggregate order: the writer inserts an Add's events in that order
	// (W1's lock order), so the stream's order is the list's.
	events := []outbox.Event{
		ev("ağg-✓-東京", "order.created", `{"name":"Zoë 東京 🚀","note":"naïve café","rtl":"مرحبا"}`, nil),
		ev("esc", "order.escaped", `{"q":"he said \"hi\"\n\ttab","path":"C:\\dir\\f","nul":"\u0000","ctl":"\u001f","html":"</script><b>&amp;","u":"\ud83d\ude80"}`,
			map[string]string{"content-type": "application/json; charset=\"utf-8\"", "x-unicode": "ü→✓", "empty": ""}),
		ev("nested", "order.nested", `{"a":{"b":[1,2,{"c":null,"d":true,"e":-0.5e-10}],"f":{}},"g":[],"h":12345678901234567890}`,
			map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
		ev("large", "order.large", large, map[string]string{"size": "1MiB"}),
		ev("nested", "order.second", `{"seq":2}`, nil),
		ev("spaces", "order.formatted", "{ \"kept\" :\t[ 1 , 2 ] ,\n  \"as\" : \"written\" }\n", nil),
	}
	events[0].OccurredAt = at
	events[2].SchemaVersion = 65535
	return events
}

// TestGolden: an event read from the binlog is exactly what the polling
// path's claim returns for the same row, field by field; only Attempts
// differs (the claim counts itself).
func TestGolden(t *testing.T) {
	e := newEnv(t)
	r := e.open(t, e.head(t))
	events := goldenEvents()
	want := e.write(t, events[:3]...)
	want = append(want, e.write(t, events[3:]...)...)

	_, got := readEvents(t, r, len(want))
	sameIDs(t, "stream order", ids(got), want)
	claimed := claimAll(t, e.db.DB)
	if len(claimed) != len(want) {
		t.Fatalf("claimed %d events, want %d", len(claimed), len(want))
	}
	st := mysql.NewStore(e.db.DB)
	for i, g := range got {
		c := claimed[g.ID]
		if g.Attempts != 0 || c.Attempts != 1 {
			t.Errorf("event %d: attempts stream %d, claim %d; want 0 and 1", i, g.Attempts, c.Attempts)
		}
		c.Attempts = 0
		compareEvents(t, i, g, c)
		shown, err := st.ShowEvent(context.Background(), g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(shown.Payload) != string(g.Payload) {
			t.Errorf("event %d: payload differs from ShowEvent's", i)
		}
		if string(g.Payload) != string(events[i].Payload) {
			t.Errorf("event %d: payload is not the bytes written", i)
		}
	}
	if got[0].OccurredAt.Location() != time.UTC || !got[0].OccurredAt.Equal(events[0].OccurredAt.Truncate(time.Microsecond)) {
		t.Errorf("occurred_at %v, want %v in UTC", got[0].OccurredAt, events[0].OccurredAt.Truncate(time.Microsecond))
	}
	if n := len(got[3].Payload); n < outbox.MaxPayloadBytesDefault-100 {
		t.Errorf("large payload is %d bytes", n)
	}
}

// compareEvents fails t for each field in which got differs from want.
func compareEvents(t *testing.T, i int, got, want store.Event) {
	t.Helper()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for f := 0; f < gv.NumField(); f++ {
		name := gv.Type().Field(f).Name
		g, w := gv.Field(f).Interface(), wv.Field(f).Interface()
		if !reflect.DeepEqual(g, w) {
			gs, ws := strings.TrimSpace(short(g)), strings.TrimSpace(short(w))
			t.Errorf("event %d (%s): %s: stream %s, claim %s", i, got.ID, name, gs, ws)
		}
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// TestSchemaChangeMidStream: a migration adding a column to outbox_events
// (in the middle of the table, shifting every later column) while the
// stream runs changes nothing in what it returns.
func TestSchemaChangeMidStream(t *testing.T) {
	e := newEnv(t)
	r := e.open(t, e.head(t))
	before := e.write(t, orderEvent("a", 1), orderEvent("b", 1))
	if _, err := e.db.DB.Exec("ALTER TABLE outbox_events ADD COLUMN extra INT NULL AFTER aggregate_id"); err != nil {
		t.Fatal(err)
	}
	after := e.write(t, goldenEvents()[:3]...)
	if _, err := e.db.DB.Exec("ALTER TABLE outbox_events ADD COLUMN tail VARCHAR(10) NOT NULL DEFAULT 'x'"); err != nil {
		t.Fatal(err)
	}
	last := e.write(t, orderEvent("a", 2))

	_, got := readEvents(t, r, len(before)+len(after)+len(last))
	sameIDs(t, "stream", ids(got), append(append(before, after...), last...))
	claimed := claimAll(t, e.db.DB)
	for i, g := range got {
		c := claimed[g.ID]
		c.Attempts = 0
		compareEvents(t, i, g, c)
	}
}

// TestOnlyCommittedOutboxInserts: a transaction writing a business table
// and events yields only the events; a rolled-back transaction yields
// nothing; updates and deletes of outbox rows, other tables and another
// database's outbox_events are skipped.
func TestOnlyCommittedOutboxInserts(t *testing.T) {
	e := newEnv(t)
	other := newEnv(t)
	db := e.db.DB
	if _, err := db.Exec("CREATE TABLE orders (id INT PRIMARY KEY, total VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	r := e.open(t, e.head(t))
	ctx := context.Background()

	// Business row and events together.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES (1, '199.00')"); err != nil {
		t.Fatal(err)
	}
	together, err := e.writer.Add(ctx, tx, orderEvent("o-1", 1), orderEvent("o-1", 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE orders SET total = '200.00' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Rolled back: never in the binlog.
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES (2, '5.00')"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer.Add(ctx, tx, orderEvent("o-2", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Another database's outbox, updates and deletes of ours, a business
	// row alone.
	other.write(t, orderEvent("elsewhere", 1))
	if _, err := db.Exec("UPDATE outbox_events SET published_at = UTC_TIMESTAMP(6)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM outbox_events WHERE aggregate_seq = 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO orders VALUES (3, '1.00')"); err != nil {
		t.Fatal(err)
	}
	last := e.write(t, orderEvent("o-3", 1))

	first := nextEvents(t, r)
	sameIDs(t, "business transaction", ids(first.Events), together)
	second := nextEvents(t, r)
	sameIDs(t, "next transaction", ids(second.Events), last)
	expectQuiet(t, r, 500*time.Millisecond)
}

// TestHeadThenOpen: a stream opened from Head returns only what committed
// after Head was read.
func TestHeadThenOpen(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	conn, err := e.db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer.Add(ctx, tx, orderEvent("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	domain, before := lastGTIDSeq(t, conn)
	head := e.head(t)
	if !head.IsGTID() || !strings.HasPrefix(head.String(), "mariadb-gtid:") {
		t.Fatalf("head %s: want a MariaDB GTID position on the stack", head)
	}
	if seq := positionSeq(t, head, domain); seq < before {
		t.Fatalf("head %s does not cover the transaction committed before it (%d)", head, before)
	}
	later := e.write(t, orderEvent("a", 2))
	r := e.open(t, head)
	sameIDs(t, "after head", ids(nextEvents(t, r).Events), later)
	expectQuiet(t, r, 300*time.Millisecond)
}

// TestResumeFromPosition: a reader opened from a Tx's Position returns
// exactly the transactions after it, with GTID and with file positions.
func TestResumeFromPosition(t *testing.T) {
	for _, kind := range []string{"gtid", "file"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			from := e.head(t)
			if kind == "file" {
				from = e.fileHead(t)
			}
			r := e.open(t, from)
			var want [][]string
			for i := range 5 {
				want = append(want, e.write(t, orderEvent("a", i), orderEvent("b", i)))
			}
			var txs []binlog.Tx
			for i := range want {
				tx := nextEvents(t, r)
				sameIDs(t, "first reader", ids(tx.Events), want[i])
				if !strings.HasPrefix(tx.Position.String(), kind) && !(kind == "gtid" && tx.Position.IsGTID()) {
					t.Fatalf("position %s: want a %s position", tx.Position, kind)
				}
				txs = append(txs, tx)
			}
			r.Close()

			for start := range 3 {
				p, err := binlog.ParsePosition(txs[start].Position.String()) // as stored by the relay
				if err != nil {
					t.Fatal(err)
				}
				resumed := e.open(t, p)
				for i := start + 1; i < len(want); i++ {
					tx := nextEvents(t, resumed)
					sameIDs(t, "resumed after tx "+txs[start].Position.String(), ids(tx.Events), want[i])
					if tx.Position != txs[i].Position {
						t.Errorf("resumed tx %d at %s, first reader at %s", i, tx.Position, txs[i].Position)
					}
				}
				expectQuiet(t, resumed, 300*time.Millisecond)
			}
		})
	}
}

// TestSavepoints: a savepoint inside a transaction does not end it, and
// events rolled back to a savepoint are not returned, even when a
// non-transactional write after the savepoint keeps them in the binlog
// (followed by ROLLBACK TO).
func TestSavepoints(t *testing.T) {
	e := newEnv(t)
	if _, err := e.db.DB.Exec("CREATE TABLE audit_myisam (id INT PRIMARY KEY) ENGINE=MyISAM"); err != nil {
		t.Fatal(err)
	}
	r := e.open(t, e.head(t))
	ctx := context.Background()
	add := func(tx *sql.Tx, n int) string {
		t.Helper()
		ids, err := e.writer.Add(ctx, tx, orderEvent("sp", n))
		if err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	exec := func(tx *sql.Tx, q string) {
		t.Helper()
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i, tc := range []struct {
		name     string
		myisam   bool
		rollback bool
	}{
		{"released", false, false},
		{"rolled back", false, true},
		{"rolled back after a MyISAM write", true, true},
	} {
		tx, err := e.db.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{add(tx, 1)}
		exec(tx, "SAVEPOINT s1")
		if tc.myisam {
			exec(tx, fmt.Sprintf("INSERT INTO audit_myisam VALUES (%d)", i))
		}
		second := add(tx, 2)
		exec(tx, "SAVEPOINT `s 2`")
		third := add(tx, 3)
		if tc.rollback {
			exec(tx, "ROLLBACK TO SAVEPOINT s1")
		} else {
			exec(tx, "RELEASE SAVEPOINT s1")
			want = append(want, second, third)
		}
		want = append(want, add(tx, 4))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		sameIDs(t, tc.name, ids(nextEvents(t, r).Events), want)
	}
	expectQuiet(t, r, 300*time.Millisecond)
}

// TestUndecodableRowIsAnEventWithADefect: rows a foreign writer got wrong
// (inserted by plain SQL; outbox.Writer refuses each, and so does the
// table's trigger since migration 6: they are written with it dropped, as
// on a table migrated before it) come out of the stream as events whose
// Defect names the column, exactly as the polling path's claim decodes
// them, and the stream goes on past them: the relay quarantines such an
// event, nothing stops (issue 21, defect 2).
func TestUndecodableRowIsAnEventWithADefect(t *testing.T) {
	e := newEnv(t)
	if _, err := e.db.DB.Exec("DROP TRIGGER outbox_events_before_insert"); err != nil {
		t.Fatal(err)
	}
	r := e.open(t, e.head(t))
	bad := []struct {
		name, id, aggregateID, headers, column string
		version                                int
	}{
		{"header value not a string", "0190f1c2-7d3e-7a41-8c55-000000000001", "x1", `{"n":1}`, "headers", 1},
		{"headers not an object", "0190f1c2-7d3e-7a41-8c55-000000000002", "x2", `[1]`, "headers", 1},
		{"NUL in a header value", "0190f1c2-7d3e-7a41-8c55-000000000003", "x3", `{"n":"a\u0000"}`, "headers", 1},
		{"id not a UUID", "not-a-uuid", "x4", `{"n":"1"}`, "id", 1},
		{"schema version 0", "0190f1c2-7d3e-7a41-8c55-000000000005", "x5", `{"n":"1"}`, "schema_version", 0},
		{"empty aggregate id", "0190f1c2-7d3e-7a41-8c55-000000000006", "", `{"n":"1"}`, "aggregate_id", 1},
	}
	for _, b := range bad {
		if _, err := e.db.DB.Exec(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
			schema_version, payload, headers, occurred_at, next_attempt_at)
			VALUES (?, 'order', ?, 1, 'order.created', ?, '{}', ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`,
			b.id, b.aggregateID, b.version, b.headers); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
	}
	// Numbered by hand: without the trigger, nothing numbers the writer's.
	after := []string{"0190f1c2-7d3e-7a41-8c55-000000000007"}
	if _, err := e.db.DB.Exec(`INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, occurred_at, next_attempt_at)
		VALUES (?, 'order', 'after', 1, 'order.created', 1, '{}', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`, after[0]); err != nil {
		t.Fatal(err)
	}
	_, got := readEvents(t, r, len(bad)+1)
	claimed := claimAll(t, e.db.DB)
	for i, b := range bad {
		g := got[i]
		if g.ID != b.id || g.Defect == nil || g.Defect.Column != b.column {
			t.Errorf("%s: streamed event %s with defect %+v, want %s with a defect of column %s", b.name, g.ID, g.Defect, b.id, b.column)
			continue
		}
		c, ok := claimed[g.ID]
		if !ok {
			t.Errorf("%s: the claim did not return the event", b.name)
			continue
		}
		c.Attempts = 0
		compareEvents(t, i, g, c)
	}
	if last := got[len(bad)]; last.ID != after[0] || last.Defect != nil {
		t.Errorf("the event after the bad rows: %s (defect %+v), want %s without one", last.ID, last.Defect, after[0])
	}
}
