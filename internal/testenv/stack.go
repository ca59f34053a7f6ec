package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RepoRoot returns the repository's root directory (where go.mod is).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StackNode runs stack/node.sh ACTION TARGET, e.g. ("stop", "kafka-2") or
// ("start", "mariadb"), and fails t if it fails.
func StackNode(t testing.TB, action, target string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(t), "stack", "node.sh"), action, target)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stack/node.sh %s %s: %v\n%s", action, target, err, out)
	}
}
