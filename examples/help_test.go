// Package examples_test checks the examples as a user meets them: each
// binary's command line (help_test.go) and each example built from a copy
// outside herald's module (copy_test.go).
package examples_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// readBy returns the variables an EnvFrom function asks for.
func readBy(envFrom func(getenv func(string) string)) []string {
	var names []string
	envFrom(func(name string) string {
		names = append(names, name)
		return ""
	})
	sort.Strings(names)
	return names
}

// run runs a binary with args and an environment whose servers do not
// exist, and returns its stdout, stderr and exit code.
func run(t *testing.T, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	// Nothing listens on port 1: a binary that tried to reach a server
	// would fail there instead of answering.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"),
		"HERALD_MYSQL_DSN=herald:herald@tcp(127.0.0.1:1)/none", "HERALD_KAFKA_BROKERS=127.0.0.1:1",
		"HERALD_WAREHOUSE_URL=http://127.0.0.1:1", "HERALD_ORDERS_ADDR=127.0.0.1:0",
		"HERALD_INVENTORY_ADDR=127.0.0.1:0", "HERALD_WAREHOUSE_ADDR=127.0.0.1:0"}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return out.String(), errOut.String(), code
}

// TestExampleBinariesAnswerHelp: each example binary answers --help (and
// -h) with its settings on stdout and exits 0 without touching a server;
// an unknown flag or an argument is an error (exit 2) naming it. (The
// examples do not read HERALD_FAILPOINTS: the drills' mains under
// cmd/herald/internal/drill/services arm it.)
func TestExampleBinariesAnswerHelp(t *testing.T) {
	// orders and warehouse read the database's TLS and password settings
	// with database.ConnOptionsFromEnv (inventory's EnvFrom reads them itself).
	mysqlVars := readBy(func(g func(string) string) { database.ConnOptionsFromEnv(g) })
	tests := []struct {
		pkg      string
		settings []string
	}{
		{"./examples/orders", slices.Concat(mysqlVars,
			[]string{"HERALD_ORDERS_ADDR", "HERALD_DATABASE_URL", "HERALD_MYSQL_DSN", "HERALD_ORDERS_TEST_ROLLBACKS"})},
		{"./examples/inventory", append(readBy(func(g func(string) string) { stock.EnvFrom(g) }),
			"HERALD_LOG_LEVEL")},
		{"./examples/warehouse", slices.Concat(readBy(func(g func(string) string) { server.EnvFrom(g) }),
			mysqlVars, []string{"HERALD_LOG_LEVEL"})},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			path := testenv.Binary(t, tt.pkg)
			for _, help := range []string{"--help", "-h"} {
				stdout, stderr, code := run(t, path, help)
				if code != 0 || stderr != "" {
					t.Errorf("%s: exit %d, want 0 and nothing on stderr\nstdout:\n%s\nstderr:\n%s", help, code, stdout, stderr)
				}
				if strings.Contains(stdout, "HERALD_FAILPOINTS") {
					t.Errorf("%s mentions HERALD_FAILPOINTS, which only the drills' mains read:\n%s", help, stdout)
				}
				for _, name := range tt.settings {
					if !strings.Contains(stdout, name) {
						t.Errorf("%s does not mention %s:\n%s", help, name, stdout)
					}
				}
			}
			if _, stderr, code := run(t, path, "--no-such-flag"); code != 2 || !strings.Contains(stderr, "no-such-flag") ||
				!strings.Contains(stderr, "--help") {
				t.Errorf("--no-such-flag: exit %d, want 2 naming the flag and --help\n%s", code, stderr)
			}
			if _, stderr, code := run(t, path, "serve"); code != 2 || !strings.Contains(stderr, `"serve"`) {
				t.Errorf("an argument: exit %d, want 2 naming it\n%s", code, stderr)
			}
		})
	}
}
