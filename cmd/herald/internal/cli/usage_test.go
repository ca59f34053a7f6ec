package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// usageCase is one wrong command line and the usage line it must print.
type usageCase struct {
	name  string
	args  []string
	usage string
}

// usageCases walks the command tree: every group named alone and with an
// unknown subcommand, and every other command with each number of
// arguments (0 to 3) its Args refuses. A command that declares no Args is
// an error: its arity would go unchecked.
func usageCases(t *testing.T) []usageCase {
	t.Helper()
	var cases []usageCase
	walk(newRootCommand(), func(cmd *cobra.Command) {
		path := strings.Fields(cmd.CommandPath())[1:]
		line := "usage: " + usageLine(cmd)
		if cmd.HasSubCommands() {
			cases = append(cases,
				usageCase{cmd.CommandPath() + " alone", path, line},
				usageCase{cmd.CommandPath() + " with an unknown command", append(path, "no-such-command"), line})
			return
		}
		if cmd.Args == nil {
			t.Errorf("%s declares no Args: say how many arguments it takes", cmd.CommandPath())
			return
		}
		for n := range 4 {
			args := make([]string, n)
			for i := range args {
				args[i] = fmt.Sprintf("arg%d", i+1)
			}
			if cmd.Args(cmd, args) != nil {
				cases = append(cases, usageCase{fmt.Sprintf("%s with %d argument(s)", cmd.CommandPath(), n),
					append(path, args...), line})
			}
		}
	})
	return cases
}

// TestUsageErrors: every wrong command line of every command (the walk
// above, so a new command is covered when it is added) exits 2 with the
// command's usage line on stderr and nothing on stdout; so do the issue's
// examples, a retry or discard naming no event, and help on a command that
// does not exist. Before, an unknown subcommand printed the help and exited
// 0, and a wrong number of arguments exited 1.
func TestUsageErrors(t *testing.T) {
	clearHeraldEnv(t)
	// A case that got past its arguments by mistake meets no server.
	t.Setenv("HERALD_DATABASE_URL", "herald:herald@tcp(127.0.0.1:1)/nowhere?timeout=1s")
	t.Setenv("HERALD_KAFKA_BROKERS", "127.0.0.1:1")

	cases := usageCases(t)
	if len(cases) < 40 {
		t.Fatalf("the walk found %d wrong command lines; the tree has more commands than that", len(cases))
	}
	cases = append(cases,
		usageCase{"issue: migrate donw", []string{"migrate", "donw"}, "usage: herald migrate status|unmap|up ..."},
		usageCase{"issue: topics crate", []string{"topics", "crate", "x"}, "usage: herald topics create|describe ..."},
		usageCase{"issue: quarantine retyr", []string{"quarantine", "retyr", "0190d7a2-0000-7000-8000-000000000000"},
			"usage: herald quarantine discard|list|retry|show ..."},
		usageCase{"issue: status extra", []string{"status", "extra"}, "usage: herald status [flags]"},
		usageCase{"issue: topics create without a topic", []string{"topics", "create"}, "usage: herald topics create TOPIC... [flags]"},
		usageCase{"issue: quarantine show without an id", []string{"quarantine", "show"}, "usage: herald quarantine show EVENT_ID [flags]"},
		usageCase{"quarantine retry naming no event", []string{"quarantine", "retry"}, "usage: herald quarantine retry [EVENT_ID...] [flags]"},
		usageCase{"quarantine discard naming no event", []string{"quarantine", "discard", "--reason=r"},
			"usage: herald quarantine discard [EVENT_ID...] [flags]"},
		usageCase{"help on an unknown command", []string{"help", "no-such-command"}, "usage: herald help [command] [flags]"},
		usageCase{"help on an unknown subcommand", []string{"help", "migrate", "donw"}, "usage: herald help [command] [flags]"},
		usageCase{"unknown flag", []string{"migrate", "up", "--no-such-flag"}, "usage: herald migrate up [flags]"},
	)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitUsage {
				t.Errorf("herald %q: exit %d, want %d\nstderr: %s", tt.args, code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tt.usage+"\n") {
				t.Errorf("herald %q: stderr does not show %q:\n%s", tt.args, tt.usage, stderr)
			}
			if stdout != "" {
				t.Errorf("herald %q: wrote to stdout:\n%s", tt.args, stdout)
			}
		})
	}
}

// TestHelpExitsZero: asking for help is not a usage error.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"migrate", "--help"}, {"quarantine", "show", "--help"}, {"help", "relay"}} {
		code, stdout, stderr := runMain(t, args...)
		if code != 0 || !strings.Contains(stdout, "Usage:") {
			t.Errorf("herald %q: exit %d, stdout %q, stderr %q; want 0 and the help", args, code, stdout, stderr)
		}
	}
}
