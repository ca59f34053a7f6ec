package examples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// module is herald's module path.
const module = "github.com/herald-outbox/herald"

// shared are the example packages a copied example may import from
// herald's module, as a user's service would: public packages that are
// part of the contract between the examples.
var shared = map[string]bool{module + "/examples/contract": true}

// TestExamplesBuildFromACopy copies each example's folder, alone, into a
// module of its own outside herald's (requiring herald, with a replace
// directive to this repository) and builds it, offline: what a user who
// copies an example gets. Go refuses herald's internal packages from
// there; the test also fails if the copy needs herald's test kit, its
// application (cmd/) or another example besides examples/contract.
func TestExamplesBuildFromACopy(t *testing.T) {
	root := testenv.RepoRoot(t)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	for _, e := range entries {
		if !e.IsDir() || !hasGoCode(t, filepath.Join(root, "examples", e.Name())) {
			continue
		}
		copied++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyModule := "example.com/" + name
			goMod := "module " + copyModule + "\n\ngo 1.26.0\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
				t.Fatal(err)
			}
			// The user's copy lives at its own module path: its imports of
			// its own packages are rewritten, as the user would.
			copyFolder(t, filepath.Join(root, "examples", name), dir, module+"/examples/"+name, copyModule)

			goCmd(t, dir, "build", "./...")
			deps := goCmd(t, dir, "list", "-deps", "-f", "{{.ImportPath}}", "./...")
			for _, dep := range strings.Fields(deps) {
				if !strings.HasPrefix(dep, module+"/") {
					continue
				}
				rel := strings.TrimPrefix(dep, module+"/")
				switch {
				case strings.HasPrefix(rel, "examples/") && !shared[dep]:
					t.Errorf("the copy of examples/%s needs %s: another example's folder", name, dep)
				case strings.HasPrefix(rel, "testkit/"), strings.HasPrefix(rel, "cmd/"):
					t.Errorf("the copy of examples/%s needs %s: herald's test kit or application, not its library", name, dep)
				}
			}
		})
	}
	if copied < 5 {
		t.Fatalf("copied %d examples; the listing of examples/ is broken", copied)
	}
}

// hasGoCode reports whether dir's tree holds a non-test Go file.
func hasGoCode(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			found = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// copyFolder copies src's tree to dst without its test files (a user's
// copy would bring its own tests), rewriting the import path from to to in
// its Go files.
func copyFolder(t *testing.T, src, dst, from, to string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case strings.HasSuffix(path, "_test.go"):
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".go") {
			data = []byte(strings.ReplaceAll(string(data), `"`+from, `"`+to))
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir offline (the module cache only, the
// copy's go.mod completed from herald's requirements) and returns its
// output; a failure fails the test with it.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in the copy: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
