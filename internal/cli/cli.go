// Package cli holds herald's commands; cmd/herald is a thin main around it so
// tests can run a command in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
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
// code. SIGINT and SIGTERM cancel the command's context. It switches on the
// failpoints HERALD_FAILPOINTS names (drills set it); a malformed value is a
// usage error, whatever the command.
func Main(args []string) int {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "herald: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := newRootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "herald: %v\n", err)
	var usage usageError
	if errors.As(err, &usage) {
		return exitUsage
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "herald publishes outbox events from MySQL/MariaDB or PostgreSQL to Kafka",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q; see herald --help", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCommand(), newMigrateCommand(), newTopicsCommand(), newRelayCommand(),
		newQuarantineCommand(), newCleanupCommand(), newStatusCommand(), newReplayCommand(), newDrillCommand(), newDemoCommand())
	bindEnvironment(root)
	return root
}
