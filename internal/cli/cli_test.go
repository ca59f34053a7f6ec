package cli

import (
	"bytes"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Main(tt.args); got != tt.want {
				t.Errorf("Main(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}
