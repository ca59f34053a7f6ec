package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/kafka"
)

// TestQuarantineRefusesUnknownClass: list, retry and discard refuse a
// --class (or HERALD_QUARANTINE_CLASS) no failure is ever recorded with,
// exit 2 and the known classes listed, before touching the database.
// Before, retry --class bogus reported "0 of 0 event(s) changed" and
// exited 0, as if nothing were quarantined.
func TestQuarantineRefusesUnknownClass(t *testing.T) {
	clearHeraldEnv(t)
	t.Setenv("HERALD_DATABASE_URL", "herald:herald@tcp(127.0.0.1:1)/nowhere?timeout=1s")
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"list", []string{"quarantine", "list", "--class=bogus"}, ""},
		{"retry", []string{"quarantine", "retry", "--class=bogus"}, ""},
		{"discard", []string{"quarantine", "discard", "--class=bogus", "--reason=r"}, ""},
		{"retry, class from the environment", []string{"quarantine", "retry"}, "bogus"},
		{"a class in the wrong case", []string{"quarantine", "list", "--class=TOO_LARGE"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("HERALD_QUARANTINE_CLASS", tt.env)
			}
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, "--class: unknown error class") ||
				!strings.Contains(stderr, strings.Join(kafka.Classes(), ", ")) {
				t.Errorf("herald %q: exit %d, want %d naming the known classes\nstdout: %s\nstderr: %s", tt.args, code, exitUsage, stdout, stderr)
			}
		})
	}
	// A known class gets past the check, to the database (not there).
	code, _, stderr := runMain(t, "quarantine", "list", "--class="+kafka.ClassTooLarge)
	if code != 1 || strings.Contains(stderr, "unknown error class") {
		t.Errorf("list --class %s: exit %d, want 1 (no database)\n%s", kafka.ClassTooLarge, code, stderr)
	}
}

// TestKafkaClassesListsEveryClass: kafka.Classes, which --class is checked
// against, names every Class* constant of package kafka, so a new class
// cannot be refused by the CLI.
func TestKafkaClassesListsEveryClass(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "..", "kafka", "errors.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Class") || i >= len(vs.Values) {
				continue
			}
			if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				n++
				if !slices.Contains(kafka.Classes(), v) {
					t.Errorf("kafka.%s (%q) is not in kafka.Classes()", name.Name, v)
				}
			}
		}
		return true
	})
	if n != len(kafka.Classes()) {
		t.Errorf("kafka/errors.go has %d Class* constants, kafka.Classes() %d names", n, len(kafka.Classes()))
	}
}
