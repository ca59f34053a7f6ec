package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestTriggerPrivilegeIsCheckedFirst: on a server with binary logging and
// log_bin_trust_function_creators off (a private server: the shared one
// keeps the stack's setting), an account without SUPER is told exactly
// what to set or grant, and nothing is migrated, not even goose's version
// table. With the variable set, or for an account with SUPER, the same
// call migrates, and a plain insert is an event.
func TestTriggerPrivilegeIsCheckedFirst(t *testing.T) {
	srv := testenv.StartPrivateMariaDB(t)
	srv.Root(t,
		"CREATE DATABASE app", "CREATE DATABASE admin_app",
		"CREATE USER 'app'@'localhost' IDENTIFIED BY 'app'", "GRANT ALL ON app.* TO 'app'@'localhost'",
		"CREATE USER 'admin'@'localhost' IDENTIFIED BY 'admin'", "GRANT ALL ON admin_app.* TO 'admin'@'localhost'",
		"GRANT SUPER ON *.* TO 'admin'@'localhost'")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(user, database string) *mysqlDB {
		db, err := mysql.Open(ctx, srv.DSN(user, user, database))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return &mysqlDB{t: t, DB: db}
	}
	app := open("app", "app")

	_, err := migrations.Herald.Up(ctx, app.DB)
	if !errors.Is(err, migrations.ErrTriggerPrivilege) {
		t.Fatalf("Up without the privilege: %v, want ErrTriggerPrivilege", err)
	}
	for _, want := range []string{"nothing was applied", "ERROR 1419", "'app'@'localhost'",
		"SET GLOBAL log_bin_trust_function_creators = 1;", "GRANT SUPER ON *.* TO 'app'@'localhost';"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	t.Logf("refused with:\n%v", err)
	if tables := app.strings("SHOW TABLES"); len(tables) != 0 {
		t.Errorf("tables after the refused migration: %v, want none", tables)
	}

	// An account with SUPER needs no variable.
	admin := open("admin", "admin_app")
	if _, err := migrations.Herald.Up(ctx, admin.DB); err != nil {
		t.Fatalf("Up with SUPER: %v", err)
	}
	admin.plainInsert(ctx)

	srv.Root(t, "SET GLOBAL log_bin_trust_function_creators = 1")
	applied, err := migrations.Herald.Up(ctx, app.DB)
	if err != nil {
		t.Fatalf("Up with log_bin_trust_function_creators=1: %v", err)
	}
	if len(applied) == 0 {
		t.Fatal("Up applied nothing")
	}
	app.plainInsert(ctx)
}

// mysqlDB is a pool of the private server with the test's helpers.
type mysqlDB struct {
	t  *testing.T
	DB *sql.DB
}

func (d *mysqlDB) strings(query string) []string {
	d.t.Helper()
	return testenv.Strings(d.t, d.DB, query)
}

// plainInsert writes one event in plain SQL and checks the trigger numbered it.
func (d *mysqlDB) plainInsert(ctx context.Context) {
	d.t.Helper()
	id := uuid.NewString()
	if _, err := d.DB.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload, occurred_at)
		VALUES (?, 'order', '1', 'order.created', 1, '{}', UTC_TIMESTAMP(6))`, id); err != nil {
		d.t.Fatal(err)
	}
	if got := d.strings("SELECT CAST(aggregate_seq AS CHAR) FROM outbox_events WHERE id = '" + id + "'"); len(got) != 1 || got[0] != "1" {
		d.t.Errorf("aggregate_seq %v, want 1", got)
	}
}

// TestWriterNeedsOnlyInsert: on MySQL the trigger runs with its definer's
// rights (the account that migrated), so a writer account with nothing
// but INSERT on outbox_events writes a numbered event, through herald's Go
// writer and in plain SQL alike.
func TestWriterNeedsOnlyInsert(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := "herald_w_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	testenv.MariaDBRoot(t, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'x'",
		"GRANT INSERT ON `"+d.Name+"`.outbox_events TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	writer, err := mysql.Open(ctx, strings.Replace(d.DSN, "herald:herald@", user+":x@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, "SELECT COUNT(*) FROM outbox_aggregates"); err == nil {
		t.Fatal("the writer account may read outbox_aggregates: the test would prove nothing")
	}
	plain := uuid.NewString()
	if _, err := writer.ExecContext(ctx, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload)
		VALUES (?, 'order', 'granted', 'order.created', 1, '{}')`, plain); err != nil {
		t.Fatalf("plain insert with INSERT only: %v", err)
	}
	w, err := outbox.NewWriter(outbox.Config{Dialect: mysql.Dialect{}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := writer.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ids, err := w.Add(ctx, tx, outbox.Event{AggregateType: "order", AggregateID: "granted", EventType: "order.cancelled",
		SchemaVersion: 1, Payload: []byte(`{}`)})
	if err != nil {
		t.Fatalf("outbox.Writer with INSERT only: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for id, seq := range map[string]string{plain: "1", ids[0]: "2"} {
		if got := d.Strings(t, "SELECT CAST(aggregate_seq AS CHAR) FROM outbox_events WHERE id = ?", id); len(got) != 1 || got[0] != seq {
			t.Errorf("event %s: aggregate_seq %v, want %s", id, got, seq)
		}
	}
}
