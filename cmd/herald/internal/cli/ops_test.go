package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// run executes a herald command in-process and returns its output and exit
// code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, new(usageError)):
		return out.String() + err.Error(), exitUsage
	}
	return out.String() + err.Error(), 1
}

// TestQuarantineCommands walks an operator through a poison event with the
// CLI: status shows it, list finds it by class, show prints its failure,
// retry --dry-run changes nothing, discard needs a reason and is audited;
// on MariaDB named by --mysql-dsn, on PostgreSQL by --database-url.
func TestQuarantineCommands(t *testing.T) {
	testenv.OnEachServer(t, testQuarantineCommands)
}

func testQuarantineCommands(t *testing.T, server testenv.Server) {
	d := testenv.NewHeraldDatabaseOn(t, server)
	st := d.Store()
	ids := d.AddEvents(t, testenv.OrderEvents("7", "7")...)
	c := testenv.Claim(t, st, "r", time.Minute, 10)
	if len(c.Events) != 2 {
		t.Fatalf("claimed %d events, want 2", len(c.Events))
	}
	if _, err := st.Settle(context.Background(), c, store.Outcome{
		Failed: []store.Failure{{EventID: ids[0], Class: "too_large", Message: "MESSAGE_TOO_LARGE", Quarantine: true}},
		Unsent: []store.Unsent{{EventID: ids[1], Behind: ids[0]}},
	}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	dsn := "--mysql-dsn=" + d.DSN
	if server == testenv.PostgreSQL {
		dsn = "--database-url=" + d.DSN
	}

	out, code := run(t, "status", dsn, "--json", "--kafka-brokers=127.0.0.1:1")
	if code != 1 {
		t.Fatalf("status without Kafka: exit %d, want 1\n%s", code, out)
	}
	var rep statusReport
	decodeFirst(t, out, &rep)
	if rep.Backlog.Quarantined != 1 || rep.Backlog.Held != 1 || len(rep.Quarantined) != 1 || rep.KafkaError == "" {
		t.Errorf("status: %+v (the database's part must be shown and Kafka's error reported)", rep)
	}

	out, code = run(t, "quarantine", "list", dsn, "--class", "too_large")
	if code != 0 || !strings.Contains(out, ids[0]) || !strings.Contains(out, "1 quarantined event(s)") {
		t.Errorf("list --class too_large: %d\n%s", code, out)
	}
	out, _ = run(t, "quarantine", "list", dsn, "--class", "timeout")
	if strings.Contains(out, ids[0]) {
		t.Errorf("list --class timeout shows the too_large event:\n%s", out)
	}
	if out, code = run(t, "quarantine", "list", dsn, "--class", "timeout", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("list --json of nothing: exit %d, %q; want []", code, out)
	}
	out, code = run(t, "quarantine", "show", dsn, ids[1])
	if code != 0 || !strings.Contains(out, `"audit": []`) || !strings.Contains(out, `"failures": []`) {
		t.Errorf("show of an event without failures or audit: exit %d, want \"failures\": [] and \"audit\": []\n%s", code, out)
	}
	out, code = run(t, "quarantine", "show", dsn, ids[0])
	if code != 0 || !strings.Contains(out, `"state": "quarantined"`) || !strings.Contains(out, "MESSAGE_TOO_LARGE") ||
		!strings.Contains(out, `"held_behind": 1`) {
		t.Errorf("show: exit %d, want the quarantined event with its failure and the 1 event held behind it\n%s", code, out)
	}
	out, code = run(t, "quarantine", "retry", dsn, "--dry-run", ids[0])
	if code != 0 || !strings.Contains(out, "would retry") {
		t.Errorf("retry --dry-run: %d\n%s", code, out)
	}
	if s, _ := st.ShowEvent(context.Background(), ids[0]); s.State != "quarantined" {
		t.Errorf("dry run changed the event to %s", s.State)
	}
	if out, code = run(t, "quarantine", "discard", dsn, ids[0]); code != exitUsage || !strings.Contains(out, "--reason") {
		t.Errorf("discard without --reason: %d\n%s", code, out)
	}
	if out, code = run(t, "quarantine", "retry", dsn); code != exitUsage {
		t.Errorf("retry without ids or filter: %d\n%s", code, out)
	}
	out, code = run(t, "quarantine", "discard", dsn, "--reason", "obsolete", "--actor", "oncall", ids[0])
	if code != 0 || !strings.Contains(out, "1 of 1 event(s) changed") {
		t.Errorf("discard: %d\n%s", code, out)
	}
	out, _ = run(t, "quarantine", "discard", dsn, "--reason", "obsolete", "--actor", "oncall", ids[0])
	if !strings.Contains(out, "0 of 1 event(s) changed") {
		t.Errorf("second discard is not a no-op:\n%s", out)
	}
	out, code = run(t, "quarantine", "retry", dsn, "--actor", "oncall", ids[0])
	if code != 1 || !strings.Contains(out, ids[0]+": discarded") || !strings.Contains(out, "cannot be retried") {
		t.Errorf("retry of a discarded event: exit %d, want 1 saying it is discarded\n%s", code, out)
	}
	if audits := d.Count(t, "SELECT COUNT(*) FROM outbox_audit WHERE event_id = ? AND actor = 'oncall'", ids[0]); audits != 1 {
		t.Errorf("%d audit rows, want 1", audits)
	}
}

// noDB points a command at a port where no database listens, so a bad
// flag that slipped through fails fast instead of touching a server.
const noDB = "--mysql-dsn=herald:herald@tcp(127.0.0.1:1)/none"

func TestCommandsRefuseBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cleanup inbox retention shorter than replay window", []string{"cleanup", "--retention", "48h", "--inbox-retention", "24h"}, "inbox retention"},
		{"cleanup batch size", []string{"cleanup", "--batch-size", "0"}, "batch size"},
		{"cleanup batch size names its flag", []string{"cleanup", "--batch-size", "0"}, "--batch-size=0"},
		{"replay without checkpoint", []string{"replay", "--from", "1h"}, "--checkpoint"},
		{"replay inverted range", []string{"replay", "--from", "1h", "--to", "2h", "--checkpoint", "x"}, "must be before"},
		{"replay bad time", []string{"replay", "--from", "yesterday", "--checkpoint", "x"}, "--from"},
		{"quarantine bad since", []string{"quarantine", "list", "--since", "soon"}, "--since"},
		{"topics min isr above replication", []string{"topics", "create", "t", "--replication-factor", "1", "--min-insync-replicas", "2"}, "--min-insync-replicas"},
		{"relay bad policy", []string{"relay", "--order-policy", "yolo"}, "--order-policy"},
		{"relay bad route", []string{"relay", "--topic", "order"}, "--topic"},
		{"relay route to an invalid topic name", []string{"relay", noDB, "--topic", "ghost=qa bad!"}, "--topic"},
		{"relay route to a topic name too long", []string{"relay", noDB, "--topic", "order=" + strings.Repeat("t", 250)}, "--topic"},
		{"relay invalid default topic", []string{"relay", noDB, "--default-topic", ".."}, "--default-topic"},
		{"relay record limit zero", []string{"relay", noDB, "--max-record-bytes", "0"}, "--max-record-bytes"},
		{"replay route to an invalid topic name", []string{"replay", noDB, "--from", "1h", "--checkpoint", "x", "--topic", "order=qa bad!"}, "--topic"},
		{"replay record limit", []string{"replay", noDB, "--from", "1h", "--checkpoint", "x", "--max-record-bytes", "-1"}, "--max-record-bytes"},
		{"replay suffix makes an invalid name", []string{"replay", noDB, "--from", "1h", "--checkpoint", "x", "--suffix", ".re play"}, "--suffix"},
		{"status route to an invalid topic name", []string{"status", noDB, "--topic", "order=qa bad!"}, "--topic"},
		{"status invalid default topic", []string{"status", noDB, "--default-topic", "a/b"}, "--default-topic"},
		{"topics create invalid name", []string{"topics", "create", "qa bad!", "--replication-factor", "1", "--min-insync-replicas", "1"}, "topic name"},
		{"topics describe invalid name", []string{"topics", "describe", "."}, "topic name"},
		{"topics create limit below the relays'", []string{"topics", "create", "t", "--replication-factor", "1", "--min-insync-replicas", "1",
			"--config", "max.message.bytes=1048588"}, "--max-record-bytes"},
		{"quarantine since negative", []string{"quarantine", "list", noDB, "--since", "-2h"}, "--since"},
		{"quarantine until negative", []string{"quarantine", "list", noDB, "--until", "-1h"}, "--until"},
		{"quarantine since after until", []string{"quarantine", "list", noDB, "--since", "1h", "--until", "2h"}, "--since"},
		{"quarantine retry since after until", []string{"quarantine", "retry", noDB, "--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"}, "--since"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(t, tt.args...)
			if code != exitUsage || !strings.Contains(out, tt.want) {
				t.Errorf("herald %v: exit %d, output %q; want exit %d naming %q", tt.args, code, out, exitUsage, tt.want)
			}
		})
	}
}

// TestMigrateOnEachServer: herald migrate up and status pick the dialect
// from the address: a postgres:// URL is PostgreSQL.
func TestMigrateOnEachServer(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		d := testenv.NewDatabaseOn(t, server)
		url := "--database-url=" + d.DSN
		if out, code := run(t, "migrate", "status", url); code != 0 || !strings.Contains(out, "database version 0") || !strings.Contains(out, "pending") {
			t.Fatalf("status of an empty database: %d\n%s", code, out)
		}
		if out, code := run(t, "migrate", "up", url); code != 0 || !strings.Contains(out, "applied migration 1") {
			t.Fatalf("up: %d\n%s", code, out)
		}
		if out, code := run(t, "migrate", "up", url); code != 0 || !strings.Contains(out, "nothing applied") {
			t.Errorf("second up: %d\n%s", code, out)
		}
		out, code := run(t, "migrate", "status", url)
		if code != 0 || strings.Contains(out, "pending") {
			t.Errorf("status after up: %d\n%s", code, out)
		}
		if n := d.Count(t, "SELECT COUNT(*) FROM outbox_events"); n != 0 {
			t.Errorf("a fresh outbox holds %d rows", n)
		}
	})
}

// TestCommandsOnADatabaseWithoutTheSchema: every command that reads or
// writes herald's tables, on a database nobody migrated, says to run
// `herald migrate up` (not the driver's "doesn't exist") and creates
// nothing there.
func TestCommandsOnADatabaseWithoutTheSchema(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, s testenv.Server) {
		d := testenv.NewDatabaseOn(t, s)
		dsn := "--database-url=" + d.DSN
		kf := "--kafka-brokers=" + strings.Join(testenv.KafkaBrokers(t), ",")
		for _, args := range [][]string{
			{"status", dsn, kf},
			{"quarantine", "list", dsn},
			{"quarantine", "show", "0190c7a4-6c34-7a51-8c8f-2d2a2a6b0b1e", dsn},
			{"quarantine", "retry", "0190c7a4-6c34-7a51-8c8f-2d2a2a6b0b1e", dsn},
			{"cleanup", dsn},
			{"replay", dsn, kf, "--from", "1h", "--checkpoint", "nothing"},
		} {
			out, code := run(t, args...)
			if code != 1 || !strings.Contains(out, "run `herald migrate up`") {
				t.Errorf("herald %s on an unmigrated database: exit %d, want 1 saying to run `herald migrate up`\n%s",
					strings.Join(args[:2], " "), code, out)
			}
		}
		tables := d.Strings(t, d.SQL("SELECT table_name FROM information_schema.tables WHERE table_schema = "+
			map[testenv.Server]string{testenv.MariaDB: "DATABASE()", testenv.PostgreSQL: "current_schema()"}[s]))
		if len(tables) > 0 {
			t.Errorf("the commands created %v", tables)
		}
	})
}

// TestCleanupNamesTheVariable: a cleanup setting refused when it came from
// its variable names the variable: HERALD_CLEANUP_RETENTION is the relay's
// --cleanup-retention too, where 0 means no background cleanup.
func TestCleanupNamesTheVariable(t *testing.T) {
	clearHeraldEnv(t)
	t.Setenv("HERALD_CLEANUP_RETENTION", "0")
	out, code := run(t, "cleanup", noDB)
	if code != exitUsage || !strings.Contains(out, "HERALD_CLEANUP_RETENTION (for --retention)=0s") {
		t.Errorf("cleanup with HERALD_CLEANUP_RETENTION=0: exit %d, %q", code, out)
	}
}
