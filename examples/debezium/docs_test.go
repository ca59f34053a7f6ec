package debezium_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDocShowsTheExample: docs/from-debezium.md shows every file
// TestSwitchFromDebezium runs, verbatim, and the herald commands it runs
// on connector.properties; every such command line of the page is one of
// those.
func TestDocShowsTheExample(t *testing.T) {
	testenv.CheckDocSnippets(t, "docs/from-debezium.md", []string{
		"examples/debezium/schema.sql", "examples/debezium/place-order.sql", "examples/debezium/marker.sql",
		"examples/debezium/connector.properties", "examples/debezium/reservations/reservations.go",
	})
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "from-debezium.md"))
	if err != nil {
		t.Fatal(err)
	}
	run := []string{migrateCommand, relayCommand}
	var shown []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "herald ") && strings.Contains(line, "connector.properties") {
			shown = append(shown, line)
		}
	}
	for _, cmd := range run {
		found := false
		for _, line := range shown {
			found = found || line == cmd
		}
		if !found {
			t.Errorf("docs/from-debezium.md does not show %q, which the test runs", cmd)
		}
	}
	for _, line := range shown {
		if line != migrateCommand && line != relayCommand {
			t.Errorf("docs/from-debezium.md shows %q, which no test runs", line)
		}
	}
}
