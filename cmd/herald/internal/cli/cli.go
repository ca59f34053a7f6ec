package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/internal/failpoint"
)

// exitUsage is the exit code for a bad flag or argument.
const exitUsage = 2

// usageError marks an error caused by the command line rather than by the
// world, so Main can answer it with exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs herald with args (without the program name) and returns the exit
// code: 0, 1 when the command failed, 2 for a usage error (an unknown
// command or flag, a wrong number of arguments, a bad value), which is
// answered with the command's usage line on stderr. SIGINT and SIGTERM
// cancel the command's context. It switches on the failpoints
// HERALD_FAILPOINTS names (drills set it); a malformed value is a usage
// error, whatever the command.
func Main(args []string) int {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "herald: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := newRootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "herald: %v\n", err)
	var usage usageError
	if errors.As(err, &usage) {
		if cmd == nil {
			cmd = root
		}
		printUsageLine(os.Stderr, cmd)
		return exitUsage
	}
	return 1
}

// printUsageLine writes cmd's usage line and where its help is.
func printUsageLine(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "usage: %s\nrun '%s --help' for more\n", usageLine(cmd), cmd.CommandPath())
}

// usageLine is cmd's synopsis: its subcommands for a group ("herald migrate
// up|status"), else cobra's use line ("herald quarantine show EVENT_ID
// [flags]").
func usageLine(cmd *cobra.Command) string {
	if names := subcommandNames(cmd); len(names) > 0 {
		return cmd.CommandPath() + " " + strings.Join(names, "|") + " ..."
	}
	return cmd.UseLine()
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "herald publishes outbox events from MySQL/MariaDB or PostgreSQL to Kafka",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newMigrateCommand(), newTopicsCommand(), newRelayCommand(),
		newQuarantineCommand(), newCleanupCommand(), newStatusCommand(), newReplayCommand(), newDrillCommand(), newDemoCommand(), newStreamCommand())
	root.AddCommand(newConsoleCommand())
	root.SetHelpCommand(newHelpCommand())
	root.InitDefaultHelpCmd()
	// cobra adds its completion command when the root executes; adding it
	// now puts it under the rules below like every other command.
	root.InitDefaultCompletionCmd()
	checkArguments(root)
	bindEnvironment(root)
	return root
}

// checkArguments makes every wrong command line a usage error (exit 2),
// for every command of the tree: a group (a command with subcommands)
// named alone or with an unknown subcommand, and a command given a number
// of arguments its Args refuses (cobra's own errors would exit 1, and a
// group's unknown subcommand printed the help and exited 0).
func checkArguments(root *cobra.Command) {
	walk(root, func(cmd *cobra.Command) {
		cmd.InitDefaultHelpFlag() // as cobra would when the command runs: the usage line is the same before
		if cmd.HasSubCommands() {
			cmd.Args = subcommandArgs
			cmd.RunE = func(cmd *cobra.Command, _ []string) error {
				return usageError{fmt.Errorf("%s needs a command: %s", cmd.CommandPath(), strings.Join(subcommandNames(cmd), ", "))}
			}
			cmd.Run = nil
			return
		}
		if args := cmd.Args; args != nil {
			cmd.Args = func(cmd *cobra.Command, a []string) error {
				err := args(cmd, a)
				switch {
				case err == nil:
					return nil
				case len(a) > 0 && args(cmd, nil) == nil && args(cmd, a[:1]) != nil:
					// cobra.NoArgs calls an argument an unknown command.
					return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), a)}
				}
				return usageError{err}
			}
		}
	})
}

// subcommandArgs refuses what a group's subcommand would have been when
// cobra found none by that name.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %s (want %s)", args[0], cmd.CommandPath(), strings.Join(subcommandNames(cmd), ", "))
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg)}
}

// subcommandNames are the names of cmd's subcommands a user may type.
func subcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			names = append(names, c.Name())
		}
	}
	return names
}

// newHelpCommand is `herald help [command]`: cobra's prints "Unknown help
// topic" and exits 0 for a command that does not exist.
func newHelpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil {
				return usageError{err}
			}
			if len(rest) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %s: no help on it", rest[0], target.CommandPath())}
			}
			return target.Help()
		},
	}
}
