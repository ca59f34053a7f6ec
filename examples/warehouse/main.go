package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/internal/database"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	slog.SetDefault(log)
	if err := run(log); err != nil {
		log.Error("warehouse failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env := server.EnvFrom(os.Getenv)
	db, dialect, err := database.Open(ctx, env.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	migrateCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := server.Migrations.Up(migrateCtx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	srv, err := server.New(server.Config{Addr: env.Addr, DB: db, Dialect: dialect, Logger: log})
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
