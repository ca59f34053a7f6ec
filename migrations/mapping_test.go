package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// foreignTableDDL is Debezium's outbox table plus the optional columns a
// mapping may name.
var foreignTableDDL = map[testenv.Server]string{
	testenv.MariaDB: `CREATE TABLE outbox (id CHAR(36) NOT NULL PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
		aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON, tenant INT, sv SMALLINT,
		hdrs JSON, created DATETIME(6))`,
	testenv.PostgreSQL: `CREATE TABLE outbox (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
		aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload json, tenant integer, sv smallint,
		hdrs jsonb, created timestamp(6))`,
}

// TestInstallMapping: a mapping that does not fit the table is refused,
// naming every problem, and changes nothing; one that fits copies every
// insert into outbox_events inside the writer's transaction (a rollback
// leaves no copy), numbered per aggregate, each mapped column where it
// belongs and the additional fields as JSON; a value herald cannot hold
// fails the writer's insert with a message naming the foreign column;
// installing again replaces the copy; dropping it stops it.
func TestInstallMapping(t *testing.T) {
	testenv.OnEachServer(t, testInstallMapping)
}

func testInstallMapping(t *testing.T, server testenv.Server) {
	ctx := context.Background()
	d := testenv.NewHeraldDatabaseOn(t, server)
	d.Exec(t, foreignTableDDL[server])
	triggers := func() int {
		if server == testenv.PostgreSQL {
			return d.Count(t, "SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = 'outbox'::regclass AND NOT tgisinternal")
		}
		return d.Count(t, "SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = DATABASE() AND event_object_table = 'outbox'")
	}

	for _, tt := range []struct {
		name  string
		m     migrations.Mapping
		wants []string
	}{
		{"no such table", migrations.Mapping{Table: "outbox2"}, []string{"table outbox2 does not exist"}},
		{"missing columns, every one named", migrations.Mapping{Table: "outbox", Payload: "body", Fields: []string{"region"}},
			[]string{"Payload: table outbox has no column body", "Fields: table outbox has no column region"}},
		{"a column of the wrong kind", migrations.Mapping{Table: "outbox", Timestamp: "tenant", SchemaVersion: "hdrs"},
			[]string{"Timestamp: column outbox.tenant is", "of kind time", "SchemaVersion: column outbox.hdrs is"}},
		{"a time as an additional field", migrations.Mapping{Table: "outbox", Fields: []string{"created"}}, []string{"Fields: column outbox.created is"}},
		{"a name herald will not quote", migrations.Mapping{Table: "outbox", ID: "id`; DROP TABLE x"}, []string{"ID: \"id`; DROP TABLE x\" is not a column"}},
		{"herald's own table", migrations.Mapping{Table: "outbox_events"}, []string{"one of herald's own tables"}},
		{"one column twice", migrations.Mapping{Table: "outbox", AggregateID: "type"}, []string{"EventType: column type already holds the aggregate id"}},
		{"no table", migrations.Mapping{}, []string{"Table: is required"}},
	} {
		err := migrations.InstallMapping(ctx, d.DB, tt.m)
		for _, want := range tt.wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err %v, want it to say %q", tt.name, err, want)
			}
		}
	}
	if n := triggers(); n != 0 {
		t.Fatalf("refused mappings left %d triggers on outbox", n)
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM outbox_mappings"); n != 0 {
		t.Fatalf("refused mappings left %d rows in outbox_mappings", n)
	}

	m := migrations.Mapping{Table: "outbox", Timestamp: "created", SchemaVersion: "sv", Headers: "hdrs", Fields: []string{"tenant", "type"}}
	if err := migrations.InstallMapping(ctx, d.DB, m); err != nil {
		t.Fatal(err)
	}
	installed, err := migrations.ReadMappings(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	if im := installed["outbox"]; im.Trigger != "herald_copy_outbox" || im.Payload != "payload" ||
		strings.Join(im.Fields, ",") != "tenant,type" || im.InstalledAt.IsZero() {
		t.Errorf("installed mapping %+v", im)
	}

	insert := d.SQL("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, tenant, sv, hdrs, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
	created := time.Date(2026, 12, 4, 10, 12, 30, 123456000, time.UTC)
	type row struct {
		id, typ, agg, eventType, payload string
		tenant                           any
		headers                          any
	}
	write := func(r row, commit bool) error {
		tx, err := d.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, insert, r.id, r.typ, r.agg, r.eventType, r.payload, r.tenant, 2, r.headers, created); err != nil {
			return err
		}
		if !commit {
			return nil
		}
		return tx.Commit()
	}
	first, second, ghost := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, r := range []row{
		{first, "order", "o-1", "order.created", `{"total": "9.90",  "lines": [1, 2]}`, 7, `{"traceparent":"00-ab"}`},
		{second, "order", "o-1", "order.paid", `{"paid":true}`, nil, nil},
	} {
		if err := write(r, true); err != nil {
			t.Fatalf("insert %s: %v", r.id, err)
		}
	}
	if err := write(row{ghost, "order", "o-1", "order.cancelled", `{}`, 1, nil}, false); err != nil {
		t.Fatal(err)
	}

	type copied struct {
		seq                 int64
		eventType           string
		version             int64
		payload             string
		headers, fields     *string
		occurred            time.Time
		aggregateType, aggr string
	}
	read := func(id string) (copied, bool) {
		var c copied
		err := d.DB.QueryRowContext(ctx, d.SQL(`SELECT aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
			payload, headers, fields, occurred_at FROM outbox_events WHERE id = ?`), id).
			Scan(&c.aggregateType, &c.aggr, &c.seq, &c.eventType, &c.version, &c.payload, &c.headers, &c.fields, &c.occurred)
		return c, err == nil
	}
	c1, ok := read(first)
	if !ok {
		t.Fatalf("event %s was not copied", first)
	}
	wantPayload := `{"total": "9.90",  "lines": [1, 2]}` // as written: json (PostgreSQL) and MariaDB's JSON keep the text
	if c1.aggregateType != "order" || c1.aggr != "o-1" || c1.seq != 1 || c1.eventType != "order.created" || c1.version != 2 ||
		c1.payload != wantPayload || !c1.occurred.Equal(created) {
		t.Errorf("copy of %s: %+v", first, c1)
	}
	var headers map[string]string
	if c1.headers == nil || json.Unmarshal([]byte(*c1.headers), &headers) != nil || headers["traceparent"] != "00-ab" {
		t.Errorf("copy of %s: headers %v", first, c1.headers)
	}
	var fields map[string]any
	if c1.fields == nil || json.Unmarshal([]byte(*c1.fields), &fields) != nil || fields["tenant"] != float64(7) || fields["type"] != "order.created" {
		t.Errorf("copy of %s: fields %v, want tenant 7 (a number) and type", first, c1.fields)
	}
	if c2, ok := read(second); !ok || c2.seq != 2 || c2.fields == nil || !strings.Contains(*c2.fields, `"tenant": null`) {
		t.Errorf("copy of %s: %+v (ok %v); want seq 2 and a null tenant", second, c2, ok)
	}
	if _, ok := read(ghost); ok {
		t.Errorf("the rolled-back insert %s was copied", ghost)
	}

	// Values herald cannot hold fail the writer's insert, which leaves
	// neither row.
	long := strings.Repeat("x", 65)
	for _, tt := range []struct {
		name string
		r    row
		want string
	}{
		{"an aggregate type wider than herald's", row{uuid.NewString(), long, "o-2", "order.created", `{}`, 1, nil},
			"herald copy of outbox: aggregatetype is longer than 64 characters"},
		{"an id that is not a UUID", row{"not-a-uuid", "order", "o-2", "order.created", `{}`, 1, nil}, "uuid"},
	} {
		err := write(tt.r, true)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.want)) {
			t.Errorf("%s: err %v, want it to say %q", tt.name, err, tt.want)
		}
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox WHERE aggregateid = 'o-2'"); n != 0 {
			t.Errorf("%s: the refused row is in outbox", tt.name)
		}
	}

	// Installed again with other fields: the copy is replaced.
	m.Fields = []string{"tenant"}
	if err := migrations.InstallMapping(ctx, d.DB, m); err != nil {
		t.Fatal(err)
	}
	third := uuid.NewString()
	if err := write(row{third, "order", "o-3", "order.created", `{}`, 3, nil}, true); err != nil {
		t.Fatal(err)
	}
	if c, ok := read(third); !ok || c.fields == nil || strings.Contains(*c.fields, "type") {
		t.Errorf("after reinstalling without type: copy %+v (ok %v)", c, ok)
	}
	if n := triggers(); n != 1 {
		t.Errorf("%d triggers on outbox after reinstalling, want 1", n)
	}

	if err := migrations.DropMapping(ctx, d.DB, "outbox"); err != nil {
		t.Fatal(err)
	}
	fourth := uuid.NewString()
	if err := write(row{fourth, "order", "o-4", "order.created", `{}`, 3, nil}, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := read(fourth); ok {
		t.Error("an insert after DropMapping was copied")
	}
	if n := triggers(); n != 0 {
		t.Errorf("%d triggers left on outbox after DropMapping", n)
	}
	if err := migrations.DropMapping(ctx, d.DB, "outbox"); !errors.Is(err, migrations.ErrNoSuchMapping) {
		t.Errorf("a second DropMapping: %v, want ErrNoSuchMapping", err)
	}
}

// TestForeignWriterNeedsOnlyItsTable: on MySQL the copy runs with its
// definer's rights, so a writer account with nothing but its own outbox
// table (SELECT, INSERT, DELETE) writes events herald relays, and deletes
// them in the same transaction (Debezium's insert-then-delete).
func TestForeignWriterNeedsOnlyItsTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := testenv.NewHeraldDatabase(t)
	d.Exec(t, foreignTableDDL[testenv.MariaDB])
	if err := migrations.InstallMapping(ctx, d.DB, migrations.Mapping{Table: "outbox"}); err != nil {
		t.Fatal(err)
	}
	user := "herald_f_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	testenv.MariaDBRoot(t, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'x'",
		"GRANT SELECT, INSERT, DELETE ON `"+d.Name+"`.outbox TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	writer, err := mysql.Open(ctx, strings.Replace(d.DSN, "herald:herald@", user+":x@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	id := uuid.NewString()
	if _, err := tx.ExecContext(ctx, `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
		VALUES (?, 'order', 'granted', 'order.created', '{}')`, id); err != nil {
		t.Fatalf("insert with rights on outbox only: %v", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM outbox WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE id = ? AND aggregate_seq = 1", id); n != 1 {
		t.Errorf("the insert-then-delete left %d copies, want 1", n)
	}
}
