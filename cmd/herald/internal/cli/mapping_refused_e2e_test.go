package cli

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestRefusedMappingChangesNothing: on a database with no herald tables,
// herald migrate up --mapping with a mapping the table does not fit (a
// table that does not exist, a column it lacks, a column of the wrong
// kind) is refused before any migration is applied, naming the connector
// property, not a Go field: the database is left as it was, with the
// foreign table alone.
func TestRefusedMappingChangesNothing(t *testing.T) {
	testenv.OnEachServer(t, testRefusedMappingChangesNothing)
}

func testRefusedMappingChangesNothing(t *testing.T, server testenv.Server) {
	d := testenv.NewDatabaseOn(t, server)
	d.Exec(t, dbzOutboxDDL[server])
	tables := "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name"
	if server == testenv.PostgreSQL {
		tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
	}
	for _, tt := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"no such table", []string{"table.include.list=" + d.Name + ".nosuch"},
			"table.include.list: table nosuch does not exist"},
		{"no such column", []string{"transforms.outbox.table.field.event.timestamp=created_when"},
			"transforms.outbox.table.field.event.timestamp: table outbox has no column created_when"},
		{"a column of the wrong kind", []string{"transforms.outbox.table.field.event.payload=tenant"},
			"transforms.outbox.table.field.event.payload: column outbox.tenant is"},
		{"a default column missing", []string{"transforms.outbox.route.by.field=kind"},
			"transforms.outbox.route.by.field: table outbox has no column kind"},
	} {
		mapping := writeMapping(t, d, "outbox.event.", tt.extra...)
		out, code := run(t, "migrate", "up", "--database-url="+d.DSN, "--mapping", mapping)
		if code != 1 || !strings.Contains(out, tt.want) || strings.Contains(out, "applied migration") {
			t.Errorf("%s: exit %d, want 1 saying %q and applying nothing\n%s", tt.name, code, tt.want, out)
		}
		for _, goField := range []string{"Table:", "Timestamp:", "Payload:", "AggregateType:"} {
			if strings.Contains(out, goField) {
				t.Errorf("%s: the message names the Go field %s\n%s", tt.name, goField, out)
			}
		}
		if got := strings.Join(d.Strings(t, tables), ","); got != "outbox" {
			t.Fatalf("%s: the refused mapping left tables %s, want outbox alone", tt.name, got)
		}
	}
}
