// Command inventory is examples/inventory as the drills run it: the same
// consumer (stock.EnvFrom, stock.RunEnv) with herald's failpoints armed from
// HERALD_FAILPOINTS: consumer.after_commit_before_offset inside package
// inbox, and consumer.after_commit_before_call wired into
// Config.BeforeWarehouseCall.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/internal/failpoint"
)

func main() {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "inventory: %v\n", err)
		os.Exit(2)
	}
	env, err := stock.EnvFrom(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: env.LogLevel}))
	slog.SetDefault(log)
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		env.Config.Logger = log
		env.Config.BeforeWarehouseCall = func() { failpoint.Hit(failpoint.ConsumerAfterCommitBeforeCall) }
		err = stock.RunEnv(ctx, env)
		stop()
	}
	if err != nil {
		log.Error("inventory failed", "error", err)
		os.Exit(1)
	}
}
