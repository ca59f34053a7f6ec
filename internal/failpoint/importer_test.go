package failpoint_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// TestLibraryIgnoresTheVariable: a program that imports relay and inbox and
// reaches every failpoint runs normally with HERALD_FAILPOINTS malformed,
// and with it valid (every failpoint set to crash): only herald's own
// binaries switch failpoints on.
func TestLibraryIgnoresTheVariable(t *testing.T) {
	importer := testenv.Binary(t, "./internal/failpoint/testdata/importer")
	crashAll := make([]string, len(failpoint.Known))
	for i, name := range failpoint.Known {
		crashAll[i] = name + "=crash"
	}
	for _, spec := range []string{"relay.nowhere=crash", "this is not a spec", strings.Join(crashAll, ";")} {
		t.Run(spec, func(t *testing.T) {
			code, out := run(t, importer, spec)
			if code != 0 || strings.TrimSpace(out) != "ran" {
				t.Errorf("exit %d, output %q; want exit 0 and \"ran\"", code, out)
			}
		})
	}
}

// TestHeraldReportsAMalformedVariable: herald's binary reads the variable
// at start, whatever the command, and refuses a malformed value with exit 2
// and a message naming the variable and the problem.
func TestHeraldReportsAMalformedVariable(t *testing.T) {
	herald := testenv.HeraldBinary(t)
	tests := []struct {
		spec string
		want []string
	}{
		{"relay.nowhere=crash", []string{failpoint.EnvVar, "unknown failpoint", "relay.nowhere"}},
		{"relay.after_claim=explode", []string{failpoint.EnvVar, "explode"}},
		{"relay.after_claim", []string{failpoint.EnvVar, "want name=action"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			code, out := run(t, herald, tt.spec, "version")
			if code != 2 {
				t.Errorf("herald version exited %d, want 2; output:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
		})
	}
	if code, out := run(t, herald, "relay.after_claim=crash", "version"); code != 0 {
		t.Errorf("herald version with a valid spec exited %d:\n%s", code, out)
	}
}

// run runs bin with HERALD_FAILPOINTS=spec and returns its exit code and
// combined output.
func run(t *testing.T, bin, spec string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), failpoint.EnvVar+"="+spec)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}
