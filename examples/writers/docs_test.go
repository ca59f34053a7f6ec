package writers_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/testenv"
)

// snippetFiles are the files docs/writers.md shows, each in full.
var snippetFiles = []string{
	"examples/writers/orders.mysql.sql", "examples/writers/orders.postgres.sql",
	"examples/writers/php/orders.php", "examples/writers/php/laravel.php",
	"examples/writers/python/orders.py", "examples/writers/java/Orders.java",
	"examples/writers/node/orders-mysql2.js", "examples/writers/node/orders-pg.js",
	"examples/writers/gosql/orders.go",
}

// snippetBlock is a marker and the fenced block that follows it.
var snippetBlock = regexp.MustCompile("(?s)<!-- snippet: (\\S+) -->\n```[a-z]*\n(.*?)\n```\n")

// consumerFiles are the files docs/consumers.md shows, each in full (the
// consumer test, examples/consumers, runs them).
var consumerFiles = []string{
	"examples/consumers/python/consumer.py",
	"examples/consumers/effects.mysql.sql", "examples/consumers/effects.postgres.sql",
}

// TestDocsShowTheSnippets: docs/writers.md and docs/consumers.md show every
// snippet the writers and consumer tests run, verbatim, and nothing else
// under a snippet marker.
func TestDocsShowTheSnippets(t *testing.T) {
	checkDocSnippets(t, "docs/writers.md", snippetFiles)
	checkDocSnippets(t, "docs/consumers.md", consumerFiles)
}

// checkDocSnippets compares each marked block of doc (a path from the
// repository's root) with its file, and checks that every file of want is
// shown.
func checkDocSnippets(t *testing.T, doc string, want []string) {
	t.Helper()
	root := testenv.RepoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range snippetBlock.FindAllStringSubmatch(string(text), -1) {
		path, block := m[1], m[2]
		shown[path] = true
		file, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s shows %s: %v", doc, path, err)
			continue
		}
		if block != strings.TrimRight(string(file), "\n") {
			t.Errorf("%s shows %s differently from the file: copy the file into the page again", doc, path)
		}
	}
	if n := strings.Count(string(text), "<!-- snippet: "); n != len(shown) {
		t.Errorf("%s has %d snippet markers, %d of them followed by a fenced block", doc, n, len(shown))
	}
	for _, path := range want {
		if !shown[path] {
			t.Errorf("%s does not show %s", doc, path)
		}
	}
}
