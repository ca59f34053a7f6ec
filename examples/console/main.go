// Command console mounts herald's web console under /herald in a service's
// own HTTP server, beside its other routes, with the users from a file:
//
//	HERALD_DATABASE_URL='herald:herald@tcp(127.0.0.1:3306)/herald' \
//	HERALD_CONSOLE_USERS_FILE=/run/secrets/console-users \
//	go run ./examples/console
//
// then open http://127.0.0.1:8089/herald/. The users file has one
// "role name secret" a line (docs/console.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/store/mysql"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "console example:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dsn := os.Getenv("HERALD_DATABASE_URL")
	if dsn == "" {
		dsn = "herald:herald@tcp(127.0.0.1:3306)/herald" // the local stack's
	}
	// On PostgreSQL: postgres.Open and postgres.NewStore.
	db, err := mysql.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	var users []console.User
	if file := os.Getenv("HERALD_CONSOLE_USERS_FILE"); file != "" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		users, err = console.ParseUsers(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	h, err := console.NewHandler(console.Config{
		Store: mysql.NewStore(db), Prefix: "/herald", Users: users,
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)),
	})
	if err != nil {
		return err
	}
	defer h.Close()

	mux := http.NewServeMux()
	mux.Handle("/herald/", h)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "the service's own page; the console is at /herald/")
	})
	srv := &http.Server{Addr: "127.0.0.1:8089", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	slog.Info("console example listening", "url", "http://127.0.0.1:8089/herald/")
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
