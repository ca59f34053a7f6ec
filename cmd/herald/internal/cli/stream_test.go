package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/store/postgres/wal"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestStreamSetupStatusDrop: on a migrated PostgreSQL database without a
// slot, herald stream status says the slot is missing; setup creates the
// publication and the slot (and says it exists the second time); status
// --json shows it; drop is refused while a relay leads the stream, unless
// --force, and then removes both; a second drop finds nothing. On MariaDB
// the commands are a usage error naming the binlog source.
func TestStreamSetupStatusDrop(t *testing.T) {
	clearHeraldEnv(t)
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	slot := wal.SlotName(d.Name)
	run := func(wantCode int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"stream"}, args...), "--database-url", d.DSN)...)
		if code != wantCode {
			t.Fatalf("herald stream %v: exit %d, want %d\n%s%s", args, code, wantCode, stdout, stderr)
		}
		return stdout + stderr
	}
	statusJSON := func() slotReport {
		t.Helper()
		var rep slotReport
		out := run(0, "status", "--json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("herald stream status --json: %v\n%s", err, out)
		}
		return rep
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"status before setup", []string{"status"}, 0, []string{"slot " + slot, "(missing)"}},
		{"setup", []string{"setup"}, 0, []string{"publication herald_outbox", "slot " + slot + ": created"}},
		{"setup again", []string{"setup"}, 0, []string{"slot " + slot + ": exists"}},
		{"status after setup", []string{"status"}, 0, []string{"slot " + slot, "retained", "not streaming"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := run(tt.code, tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("herald stream %v does not say %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
	if rep := statusJSON(); !rep.Exists || rep.Slot != slot || len(rep.Slots) != 1 || rep.Slots[0].Name != slot || rep.Slots[0].Plugin != "pgoutput" {
		t.Errorf("status --json after setup: %+v, want slot %s (pgoutput)", rep, slot)
	}
	d.Exec(t, "INSERT INTO outbox_stream (id, leader, epoch, expires_at) VALUES (1, 'r1', 1, statement_timestamp() + interval '1 hour')")
	if out := run(1, "drop"); !strings.Contains(out, "relay r1 leads the stream") || !strings.Contains(out, "--force") {
		t.Errorf("drop under a leader was not refused with the reason:\n%s", out)
	}
	if out := run(0, "drop", "--force"); !strings.Contains(out, "slot "+slot+": dropped") || !strings.Contains(out, "publication herald_outbox: dropped") {
		t.Errorf("drop --force:\n%s", out)
	}
	if rep := statusJSON(); rep.Exists || len(rep.Slots) != 0 {
		t.Errorf("status --json after drop: %+v, want no slot", rep)
	}
	if out := run(0, "drop", "--force"); !strings.Contains(out, "did not exist") {
		t.Errorf("a second drop:\n%s", out)
	}
	code, stdout, stderr := runMain(t, "stream", "status", "--database-url", testenv.NewDatabase(t).DSN)
	if code != 2 || !strings.Contains(stdout+stderr, "--source binlog") {
		t.Errorf("herald stream status on MariaDB: exit %d, want 2 naming the binlog source\n%s%s", code, stdout, stderr)
	}
}
