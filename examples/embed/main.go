// Command embed is a service that runs herald's relay in its own process,
// as you would copy it into yours: it opens the database, applies herald's
// schema, adds an event in a transaction of its own and runs a
// relay.Service, which publishes the event and keeps publishing whatever
// the service commits, until SIGINT or SIGTERM.
//
//	herald topics create orders.v1 --partitions 3 --replication-factor 1 --min-insync-replicas 1
//	go run ./examples/embed
//
// Environment:
//
//	HERALD_DATABASE_URL         a postgres:// URL for PostgreSQL, else a MySQL/MariaDB DSN (default: the
//	                            local stack's MariaDB); HERALD_MYSQL_DSN is its alias
//	HERALD_KAFKA_BROKERS        comma-separated seed brokers (default 127.0.0.1:9092)
//	HERALD_EMBED_TOPIC          topic of aggregate type "order" (default orders.v1); it must exist
//	HERALD_EMBED_METRICS_ADDR   address of /healthz, /readyz and /metrics (default 127.0.0.1:9111)
//	HERALD_KAFKA_TLS*, HERALD_KAFKA_SASL_*, HERALD_MYSQL_TLS*, HERALD_MYSQL_PASSWORD[_FILE]
//	                            secured connections, as herald's --kafka-* and --mysql-* flags
//	                            (docs/security.md; a PostgreSQL URL carries its own TLS settings)
//
// Those last variables become a kafka.Security and a mysql.ConnOptions (or
// a postgres.ConnOptions); your service fills them from its own
// configuration.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("embed failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	dsn := getenv("HERALD_DATABASE_URL", getenv("HERALD_MYSQL_DSN", "herald:herald@tcp(127.0.0.1:3306)/herald"))
	brokers := strings.Split(getenv("HERALD_KAFKA_BROKERS", "127.0.0.1:9092"), ",")
	topic := getenv("HERALD_EMBED_TOPIC", "orders.v1")
	security, err := kafka.SecurityFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// TLS, SASL and client certificates as franz-go options; every file
	// they name is read here, so a bad one stops the service at once.
	kafkaOpts, err := security.Options()
	if err != nil {
		return fmt.Errorf("kafka security: %w", err)
	}

	// The service's own database, with herald's tables in it; TLS and a
	// password kept out of the DSN come from the options. database.Open
	// calls mysql.OpenWith or postgres.OpenWith as the address says and
	// returns the dialect (mysql.Dialect{} or postgres.Dialect{}): your
	// service calls the one of its database.
	db, dialect, err := database.Open(ctx, dsn, database.ConnOptionsFromEnv(os.Getenv))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := migrations.Herald.Up(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	// What the service does all day: change its rows and add events in the
	// same transaction.
	id, err := placeOrder(ctx, db, dialect, 9182)
	if err != nil {
		return err
	}
	log.Info("event added", "event_id", id)

	// The relay, in the same process. A record is acknowledged or given up
	// well inside the relay's lease (relay.LeaseDefault, 8s; herald relay
	// takes two thirds of its --lease).
	producer, err := kafka.NewProducer(kafka.ProducerConfig{
		Brokers: brokers, ClientID: "embed", DeliveryTimeout: 5 * time.Second, Logger: log,
		ClientOptions: kafkaOpts,
	})
	if err != nil {
		return err
	}
	defer producer.Close()
	svc, err := relay.NewService(relay.ServiceConfig{
		Relay:       relay.Config{Topics: map[string]string{"order": topic}},
		MetricsAddr: getenv("HERALD_EMBED_METRICS_ADDR", "127.0.0.1:9111"),
		Logger:      log,
	}, store.New(db, dialect), producer)
	if err != nil {
		return err
	}
	// Returns after SIGTERM, once the batch in flight is settled and every
	// goroutine the service started has stopped.
	return svc.Run(ctx)
}

// placeOrder commits an order.created event; the service's own rows (the
// order itself) would be written in the same transaction.
func placeOrder(ctx context.Context, db *sql.DB, dialect store.Dialect, orderID int64) (string, error) {
	w, err := outbox.NewWriter(outbox.Config{Dialect: dialect})
	if err != nil {
		return "", err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback() // a no-op after Commit
	payload, err := json.Marshal(map[string]any{"order_id": orderID, "customer_id": 42, "total_amount": "19.98"})
	if err != nil {
		return "", err
	}
	ids, err := w.Add(ctx, tx, outbox.Event{
		AggregateType: "order", AggregateID: fmt.Sprint(orderID),
		EventType: "order.created", SchemaVersion: 1, Payload: payload,
	})
	if err != nil {
		return "", err
	}
	return ids[0], tx.Commit()
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
