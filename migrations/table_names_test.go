package migrations_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestMappingTableNames: a foreign table is never refused for its name
// alone (outbox_messages, herald_events: names teams use), only for one of
// herald's own tables' (Herald.Tables, which are exactly the tables
// herald's schema leaves in a database), with a message saying so.
func TestMappingTableNames(t *testing.T) {
	testenv.OnEachServer(t, testMappingTableNames)
}

func testMappingTableNames(t *testing.T, server testenv.Server) {
	ctx := context.Background()
	d := testenv.NewHeraldDatabaseOn(t, server)
	tables := "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name"
	if server == testenv.PostgreSQL {
		tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
	}
	own := migrations.Herald.Tables()
	if got := d.Strings(t, tables); !slices.Equal(got, own) {
		t.Fatalf("herald's schema left tables %v; Herald.Tables says %v", got, own)
	}
	for _, name := range own {
		err := migrations.Mapping{Table: name}.Validate()
		if err == nil || !strings.Contains(err.Error(), "Table: \""+name+"\" is one of herald's own tables") {
			t.Errorf("a foreign table named %s: %v, want it refused as herald's own", name, err)
		}
	}

	for _, name := range []string{"outbox_messages", "herald_events", "outbox_eventsx"} {
		d.Exec(t, strings.Replace(foreignTableDDL[server], "CREATE TABLE outbox ", "CREATE TABLE "+name+" ", 1))
		if err := migrations.InstallMapping(ctx, d.DB, migrations.Mapping{Table: name}); err != nil {
			t.Errorf("a foreign table named %s: %v", name, err)
			continue
		}
		id := uuid.NewString()
		d.Exec(t, d.SQL("INSERT INTO "+name+" (id, aggregatetype, aggregateid, type, payload) VALUES (?, 'order', ?, 'order.created', '{}')"), id, name)
		if n := d.Count(t, d.SQL("SELECT COUNT(*) FROM outbox_events WHERE id = ? AND aggregate_id = ?"), id, name); n != 1 {
			t.Errorf("an insert into %s left %d copies, want 1", name, n)
		}
	}
}
