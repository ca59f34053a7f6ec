package herald_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// module is herald's module path.
const module = "github.com/herald-outbox/herald"

// The three kinds of code in the tree (docs/design.md, "The layout"): the
// library a service imports; the herald binary's own packages (under
// cmd/herald); the test kit, for tests, benchmarks and drills only
// (testkit/). The examples are the library's users.
func kindOf(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	switch {
	case strings.HasPrefix(rel, "cmd/"):
		return "application"
	case strings.HasPrefix(rel, "testkit/"):
		return "test kit"
	case strings.HasPrefix(rel, "examples/"):
		return "example"
	case rel == "internal" || strings.HasPrefix(rel, "internal/"):
		return "plumbing"
	default:
		return "library"
	}
}

type listedPackage struct {
	ImportPath string
	Imports    []string
}

// modulePackages lists every package of the module (without bench, a
// module of its own) with the herald packages its non-test files import.
func modulePackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				own = append(own, imp)
			}
		}
		p.Imports = own
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages; the listing is broken", len(pkgs))
	}
	return pkgs
}

// TestImportBoundaries keeps the arrows of the import graph pointing down:
// the library and its plumbing import neither the application nor the
// test kit; the plumbing (internal/) imports nothing of herald's above it;
// the test kit does not import the application; an example imports only
// the library, as a service that copied it would (Go refuses another
// module's internal packages).
func TestImportBoundaries(t *testing.T) {
	allowed := map[string]map[string]bool{
		"plumbing":    {"plumbing": true},
		"library":     {"library": true, "plumbing": true},
		"test kit":    {"library": true, "plumbing": true, "test kit": true},
		"application": {"library": true, "plumbing": true, "test kit": true, "application": true},
		"example":     {"library": true, "example": true},
	}
	checked := 0
	for _, p := range modulePackages(t) {
		from := kindOf(p.ImportPath)
		for _, imp := range p.Imports {
			checked++
			to := kindOf(imp)
			if !allowed[from][to] {
				t.Errorf("%s (%s) imports %s (%s)", p.ImportPath, from, imp, to)
			}
			if from == "example" && to == "example" && strings.Contains(imp, "/internal") {
				t.Errorf("%s imports %s: an example's internal package cannot be copied with it", p.ImportPath, imp)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d imports; the listing is broken", checked)
	}
}
