package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// snippetBlock is a page's snippet marker and the fenced block that
// follows it.
var snippetBlock = regexp.MustCompile("(?s)<!-- snippet: (\\S+) -->\n```[a-z]*\n(.*?)\n```\n")

// CheckDocSnippets checks that doc (a path from the repository's root)
// shows every file of want (paths from the root), each in full, verbatim,
// in a fenced block under a "<!-- snippet: path -->" marker, and that
// every marker is followed by such a block: the tests that run the files
// then prove what the page shows.
func CheckDocSnippets(t testing.TB, doc string, want []string) {
	t.Helper()
	root := RepoRoot(t)
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
