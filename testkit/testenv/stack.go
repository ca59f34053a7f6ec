package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// LockStackDefaults makes t the only test, in any test process on this
// machine, using what herald's commands use when no flag says otherwise:
// the stack's database herald, the relay's metrics address
// 127.0.0.1:9101 and the topic orders.v1. It waits (up to 10 minutes)
// for a test holding them, and releases them when t ends. Tests of the
// defaults take it; every other test uses databases and topics of its own.
func LockStackDefaults(t testing.TB) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "herald-test-stack-defaults.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("lock the stack's defaults: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	WaitFor(t, 10*time.Minute, "the stack's defaults (database herald, 127.0.0.1:9101, orders.v1) free of another test", func() (bool, string) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		return err == nil, fmt.Sprint(err)
	})
}
