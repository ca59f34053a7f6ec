// Command orders is examples/orders as the drills run it: the same service
// (api.EnvFrom, api.RunEnv) with herald's failpoints armed from
// HERALD_FAILPOINTS and orders.after_commit wired into Config.AfterCommit.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/internal/failpoint"
)

func main() {
	if err := failpoint.EnableFromEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "orders: %v\n", err)
		os.Exit(2)
	}
	env, err := api.EnvFrom(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "orders: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env.Config.Logger = log
	env.Config.AfterCommit = func() { failpoint.Hit(failpoint.OrdersAfterCommit) }
	if err := api.RunEnv(ctx, env); err != nil {
		log.Error("orders service stopped", "error", err.Error())
		stop()
		os.Exit(1)
	}
}
