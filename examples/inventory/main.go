package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store/mysql"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	if err := run(log); err != nil {
		log.Error("inventory failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env, err := stock.EnvFrom(os.Getenv)
	if err != nil {
		return err
	}
	db, err := mysql.Open(ctx, env.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, set := range []migrations.Set{migrations.Herald, stock.Migrations} {
		if _, err := set.Up(setupCtx, db); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if err := stock.Seed(setupCtx, db, env.Seed); err != nil {
		return err
	}
	cfg := env.Config
	cfg.DB = db
	cfg.Logger = log
	svc, err := stock.New(cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
