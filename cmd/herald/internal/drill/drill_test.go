package drill_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDrillEndToEnd runs `herald drill --drill committed-relay-not-run`
// with 50 orders as a process, against the real servers, and checks the
// report it writes: a broken drill (or a broken pipeline) fails make test.
// The relays' 3 s lease makes their delivery timeout 2 s, shorter than the
// 2.5 s of load they wait through: a relay that counted the delivery
// timeout from occurred_at (fixed in relay/publish.go) never publishes the
// oldest events, and this test fails.
func TestDrillEndToEnd(t *testing.T) {
	testenv.KafkaBrokers(t) // fails (or skips under -short) without Kafka
	bin := binDir(t)
	dir := t.TempDir()
	var suffix [4]byte
	rand.Read(suffix[:])
	prefix := "herald_t_drill_" + hex.EncodeToString(suffix[:]) + "_"
	dropDatabases(t, prefix+"committed_relay_not_run")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(dir, "report.json")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "herald"), "drill", "--drill", "committed-relay-not-run",
		"--events", "50", "--rate", "20", "--lease", "3s", "--timeout", "30s", "--report", report, "--run-dir", filepath.Join(dir, "run"), "--db-prefix", prefix)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald drill: %v\n%s", err, out.String())
	}
	t.Logf("herald drill took %v", time.Since(start).Round(time.Millisecond))

	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep drill.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != drill.VerdictPass || len(rep.Drills) != 1 {
		t.Fatalf("verdict %q with %d drills, want pass with 1\n%s", rep.Verdict, len(rep.Drills), out.String())
	}
	d := rep.Drills[0]
	switch {
	case d.Name != "committed-relay-not-run" || d.Verdict != drill.VerdictPass:
		t.Errorf("drill %s: %s %v", d.Name, d.Verdict, d.Failures)
	case d.Orders.Attempted < 50 || d.Orders.Committed < 30 || d.Events < d.Orders.Committed:
		t.Errorf("orders %+v, %d events: the load did not happen", d.Orders, d.Events)
	case d.TopicRecords < d.Events || d.Lost != 0 || d.Ghosts != 0 || d.DoubleEffects != 0 || d.DeadLettered != 0:
		t.Errorf("%d records for %d events, %d lost, %d ghosts, %d double effects, %d dead-lettered",
			d.TopicRecords, d.Events, d.Lost, d.Ghosts, d.DoubleEffects, d.DeadLettered)
	case d.Reservations != d.Orders.Committed || d.Releases != d.Orders.Cancelled:
		t.Errorf("%d reservations and %d releases for %d orders (%d cancelled)", d.Reservations, d.Releases, d.Orders.Committed, d.Orders.Cancelled)
	case !d.Injection.Injected || d.RecoverySeconds == nil:
		t.Errorf("fault %+v, recovery %v: the relays were never started late", d.Injection, d.RecoverySeconds)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| committed-relay-not-run |") || !strings.Contains(string(md), "| PASS |") {
		t.Errorf("summary lacks the drill's row:\n%s", md)
	}
	for _, e := range d.Exits {
		if !e.Requested || !e.Clean {
			t.Errorf("exit %+v: want every process stopped by the drill with status 0", e)
		}
	}
}

// TestDrillCommandFailsOnBadFlags: usage errors exit 2 and name the flag.
func TestDrillCommandFailsOnBadFlags(t *testing.T) {
	herald := filepath.Join(binDir(t), "herald")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--drill", "no-such-drill"}, "--drill: unknown drill"},
		{[]string{"--events", "3"}, "--events: at least 10"},
		{[]string{"--bin-dir", t.TempDir()}, "--bin-dir: no herald binary"},
		{[]string{"--db-prefix", "x-y"}, "--db-prefix"},
		{[]string{"--drill", "stream-crash-after-read"}, "--drill: drill \"stream-crash-after-read\" runs with --source binlog or wal, not poll"},
		{[]string{"--source", "binlog", "--drill", "relay-crash-after-claim"}, "runs with --source poll, not binlog"},
		{[]string{"--source", "binlog", "--drill", "stream-slot-dropped"}, "runs with --source wal, not binlog"},
		{[]string{"--source", "cdc"}, `--source: "cdc": want poll, binlog or wal`},
		{[]string{"--source", "binlog", "--database-url", "postgres://herald:herald@127.0.0.1:5432/herald"}, "--source: binlog reads the MariaDB/MySQL binlog; on PostgreSQL use wal"},
		{[]string{"--source", "wal"}, "--source: wal reads PostgreSQL's WAL; on MariaDB/MySQL use binlog"},
	}
	for _, tt := range tests {
		cmd := exec.Command(herald, append([]string{"drill"}, tt.args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tt.want) {
			t.Errorf("herald drill %v: %v, %s; want exit status 2 naming %q", tt.args, err, out, tt.want)
		}
	}
	out, err := exec.Command(herald, "drill", "--list").CombinedOutput()
	if err != nil {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	for _, d := range drill.Catalog {
		if !strings.Contains(string(out), d.Name) {
			t.Errorf("--list lacks %s:\n%s", d.Name, out)
		}
	}
}

// TestLookupBySource: "all" is every drill of the relays' source.
func TestLookupBySource(t *testing.T) {
	for _, source := range []string{drill.SourcePoll, drill.SourceBinlog, drill.SourceWAL} {
		drills, err := drill.Lookup("all", source)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range drills {
			names = append(names, d.Name)
			if !d.AppliesTo(source) {
				t.Errorf("all with %s includes %s, a drill of %s", source, d.Name, d.Source)
			}
		}
		for _, d := range drill.Catalog {
			if d.AppliesTo(source) && !slices.Contains(names, d.Name) {
				t.Errorf("all with %s lacks %s", source, d.Name)
			}
		}
	}
}

// TestLookupLeavesOut: a name after "-" leaves its drill out of those
// named before it, and must be a drill of the catalog.
func TestLookupLeavesOut(t *testing.T) {
	names := func(spec, source string) []string {
		t.Helper()
		drills, err := drill.Lookup(spec, source)
		if err != nil {
			t.Fatalf("Lookup(%q, %s): %v", spec, source, err)
		}
		var out []string
		for _, d := range drills {
			out = append(out, d.Name)
		}
		return out
	}
	all := names("all", drill.SourceBinlog)
	without := names("all,-kafka-broker-restart", drill.SourceBinlog)
	if len(without) != len(all)-1 || slices.Contains(without, "kafka-broker-restart") {
		t.Errorf("all,-kafka-broker-restart = %v; want %v less kafka-broker-restart", without, all)
	}
	if got := names("database-restart,stream-crash-after-ack,-database-restart", drill.SourceWAL); !slices.Equal(got, []string{"stream-crash-after-ack"}) {
		t.Errorf("a listed drill left out: got %v", got)
	}
	if _, err := drill.Lookup("all,-no-such-drill", drill.SourcePoll); err == nil || !strings.Contains(err.Error(), `unknown drill "no-such-drill"`) {
		t.Errorf("leaving out an unknown drill: %v", err)
	}
}

// dropDatabases drops a drill's databases when the test ends, whatever
// the drill kept.
func dropDatabases(t *testing.T, base string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := mysql.Open(ctx, localstack.MySQLDSN())
		if err != nil {
			return
		}
		defer db.Close()
		for _, s := range []string{"_orders", "_inventory", "_warehouse"} {
			db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+base+s+"`")
		}
	})
}
