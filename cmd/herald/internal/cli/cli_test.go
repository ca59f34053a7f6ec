package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "herald ") {
		t.Errorf("version printed %q, want a line starting with \"herald \"", out.String())
	}
}

func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"version", []string{"version"}, 0},
		{"unknown flag is a usage error", []string{"version", "--no-such-flag"}, exitUsage},
		{"unknown command is a usage error", []string{"no-such-command"}, exitUsage},
		{"no command is a usage error", nil, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Main(tt.args); got != tt.want {
				t.Errorf("Main(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}

// runMain runs Main(args) in-process, as cmd/herald does, and returns its
// exit code and what it wrote to stdout and stderr.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outFile, err := os.Create(dir + "/stdout")
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(dir + "/stderr")
	if err != nil {
		t.Fatal(err)
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outFile, errFile
	code = Main(args)
	os.Stdout, os.Stderr = savedOut, savedErr
	outFile.Close()
	errFile.Close()
	out, _ := os.ReadFile(outFile.Name())
	errOut, _ := os.ReadFile(errFile.Name())
	return code, string(out), string(errOut)
}
