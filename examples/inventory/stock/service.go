package stock

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/inbox"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

//go:embed sql/*.sql sql/postgres/*.sql
var migrationFiles embed.FS

// Migrations is the inventory's schema (stock, reservations, rejections,
// warehouse_calls), with its own version table. The inbox table comes from
// migrations.Herald.
var Migrations = migrations.Set{Name: "inventory", Table: "inventory_schema_migrations", FS: mustSub(migrationFiles, "sql"),
	PostgresFS: mustSub(migrationFiles, "sql/postgres")}

// Defaults of Config.
const (
	// ConsumerNameDefault is Config.ConsumerName's default.
	ConsumerNameDefault = "inventory"
	// WarehouseURLDefault is Config.WarehouseURL's default.
	WarehouseURLDefault = "http://127.0.0.1:8081"
	// AddrDefault is Config.Addr's default.
	AddrDefault = "127.0.0.1:9102"
	// DefaultStockDefault is Config.DefaultStock's default.
	DefaultStockDefault = 1_000_000
	// SweepIntervalDefault is Config.SweepInterval's default.
	SweepIntervalDefault = 2 * time.Second
	// SweepGraceDefault is Config.SweepGrace's default.
	SweepGraceDefault = 5 * time.Second
)

// Config shapes a Service. DB and Brokers are required.
type Config struct {
	// DB is the inventory's database: its tables and consumed_events.
	// Required.
	DB *sql.DB
	// Brokers are Kafka's seed brokers. Required.
	Brokers []string
	// KafkaOptions are the Kafka client's extra options, such as
	// kafka.Security's (TLS, SASL). Defaults to none.
	KafkaOptions []kgo.Opt
	// Topics carry the order events. Defaults to ["orders.v1"].
	Topics []string
	// ConsumerName is the inbox's consumer name. Defaults to "inventory".
	ConsumerName string
	// Group is the Kafka consumer group. Defaults to ConsumerName.
	Group string
	// Dialect is DB's: mysql.Dialect{} or postgres.Dialect{}. Defaults to
	// mysql.Dialect{}.
	Dialect store.Dialect
	// WarehouseURL is the warehouse service's base URL. Defaults to
	// http://127.0.0.1:8081.
	WarehouseURL string
	// Addr serves /healthz and /stats; "-" serves nothing. Defaults to
	// 127.0.0.1:9102.
	Addr string
	// BatchSize is the inbox's records per transaction. Defaults to 1.
	BatchSize int
	// DisableAutoProvision makes an unknown SKU short (the order is
	// rejected) instead of creating it with DefaultStock. Defaults to false.
	DisableAutoProvision bool
	// DefaultStock is the available quantity of an auto-provisioned SKU.
	// Defaults to 1,000,000.
	DefaultStock int64
	// SweepInterval is how often pending warehouse calls are swept.
	// Defaults to 2 s.
	SweepInterval time.Duration
	// SweepGrace is how old a pending call must be before the sweeper takes
	// it (younger ones belong to the dispatcher that queued them). Defaults
	// to 5 s.
	SweepGrace time.Duration
	// StartAt, RateLimit and SessionTimeout are passed to the inbox (see
	// inbox.Config). Default to the inbox's defaults.
	StartAt        time.Time
	RateLimit      float64
	SessionTimeout time.Duration
	// HTTPClient calls the warehouse. Defaults to a client with a 5 s
	// timeout.
	HTTPClient *http.Client
	// Routes, if set, adds handlers (such as /metrics) to the mux that
	// serves /healthz and /stats on Addr. Defaults to nil.
	Routes func(mux *http.ServeMux)
	// Observer receives the inbox's outcomes. Defaults to none.
	Observer inbox.Observer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// BeforeWarehouseCall, when set, is called before each warehouse call,
	// after the transaction that queued it committed: the window where a
	// crash leaves a committed reservation whose call is still pending (the
	// sweeper makes it later). herald's crash drills stop the process
	// there. Defaults to nil.
	BeforeWarehouseCall func()
}

func (c Config) withDefaults() Config {
	if c.Dialect == nil {
		c.Dialect = mysql.Dialect{}
	}
	if len(c.Topics) == 0 {
		c.Topics = []string{contract.TopicOrdersDefault}
	}
	if c.ConsumerName == "" {
		c.ConsumerName = ConsumerNameDefault
	}
	if c.WarehouseURL == "" {
		c.WarehouseURL = WarehouseURLDefault
	}
	if c.Addr == "" {
		c.Addr = AddrDefault
	}
	if c.DefaultStock == 0 {
		c.DefaultStock = DefaultStockDefault
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = SweepIntervalDefault
	}
	if c.SweepGrace == 0 {
		c.SweepGrace = SweepGraceDefault
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: callTimeout}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.DB == nil:
		return errors.New("inventory config: DB is required")
	case len(c.Brokers) == 0:
		return errors.New("inventory config: Brokers is required")
	case c.DefaultStock < 0:
		return fmt.Errorf("inventory config: DefaultStock must not be negative, got %d", c.DefaultStock)
	case c.SweepInterval < 0:
		return fmt.Errorf("inventory config: SweepInterval must not be negative, got %s", c.SweepInterval)
	case c.SweepGrace < 0:
		return fmt.Errorf("inventory config: SweepGrace must not be negative, got %s", c.SweepGrace)
	case c.WarehouseURL != "" && !strings.HasPrefix(c.WarehouseURL, "http://") && !strings.HasPrefix(c.WarehouseURL, "https://"):
		return fmt.Errorf("inventory config: WarehouseURL must start with http:// or https://, got %q", c.WarehouseURL)
	}
	return nil
}

// Service is the inventory consumer: it reserves stock for created orders
// and releases it for cancelled ones, exactly once per event, and tells the
// warehouse after each commit.
type Service struct {
	cfg        Config
	log        *slog.Logger
	consumer   *inbox.Consumer
	dispatcher *dispatcher

	mu   sync.Mutex
	addr string // where /healthz listens, once it does
}

// New returns a Service; Run starts it. Apply Migrations (and
// migrations.Herald) first.
func New(cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg, log: cfg.Logger}
	s.dispatcher = &dispatcher{
		db: cfg.DB, dialect: cfg.Dialect, client: cfg.HTTPClient, url: strings.TrimSuffix(cfg.WarehouseURL, "/") + "/v1/operations",
		log: cfg.Logger.With("consumer", cfg.ConsumerName), interval: cfg.SweepInterval, grace: cfg.SweepGrace,
		backoff: 500 * time.Millisecond, backoffLimit: time.Minute,
		keys: make(chan string, 4096), beforeCall: cfg.BeforeWarehouseCall,
	}
	c, err := inbox.New(inbox.Config{
		Dialect:        cfg.Dialect,
		ConsumerName:   cfg.ConsumerName,
		Brokers:        cfg.Brokers,
		KafkaOptions:   cfg.KafkaOptions,
		Topics:         cfg.Topics,
		Group:          cfg.Group,
		DB:             cfg.DB,
		Registry:       contract.NewRegistry(),
		Handler:        &reserver{dialect: cfg.Dialect, autoProvision: !cfg.DisableAutoProvision, defaultStock: cfg.DefaultStock},
		AfterCommit:    s.afterCommit,
		BatchSize:      cfg.BatchSize,
		StartAt:        cfg.StartAt,
		RateLimit:      cfg.RateLimit,
		SessionTimeout: cfg.SessionTimeout,
		Observer:       cfg.Observer,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	s.consumer = c
	return s, nil
}

// afterCommit hands the committed events' calls to the dispatcher. Events
// that queued no call (rejections, releases of nothing) find no pending row.
func (s *Service) afterCommit(_ context.Context, msgs []inbox.Message) {
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		keys[i] = m.EventID
	}
	s.dispatcher.notify(keys)
}

// Run consumes, calls the warehouse and serves /healthz and /stats until
// ctx is cancelled; then it drains (the transaction and the call at hand
// finish, offsets are committed) and returns nil.
func (s *Service) Run(ctx context.Context) error {
	var ln net.Listener
	if s.cfg.Addr != "-" {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("inventory: listen: %w", err)
		}
		s.mu.Lock()
		s.addr = ln.Addr().String()
		s.mu.Unlock()
		s.log.Info("inventory health endpoint listening", "addr", s.addr)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	wg.Go(func() { s.dispatcher.run(runCtx) })
	srv := &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 5 * time.Second}
	if ln != nil {
		wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("inventory health endpoint failed", "error", err)
			}
		})
	}
	err := s.consumer.Run(runCtx)
	cancel()
	if ln != nil {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(shutdownCtx)
		done()
	}
	wg.Wait()
	return err
}

// Addr returns the address /healthz listens on, once Run has started it.
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Stats is what /stats serves.
type Stats struct {
	Processed    int64            `json:"processed"`
	Duplicates   int64            `json:"duplicates"`
	DeadLettered map[string]int64 `json:"dead_lettered"`
	Retries      map[string]int64 `json:"retries"`
	// CallsDone, CallsFailed and CallRetries count this process's warehouse
	// calls.
	CallsDone   int64 `json:"calls_done"`
	CallsFailed int64 `json:"calls_failed"`
	CallRetries int64 `json:"call_retries"`
}

// Stats returns the service's counters since it started.
func (s *Service) Stats() Stats {
	in := s.consumer.Stats()
	return Stats{
		Processed: in.Processed, Duplicates: in.Duplicates, DeadLettered: in.DeadLettered, Retries: in.Retries,
		CallsDone: s.dispatcher.done.Load(), CallsFailed: s.dispatcher.failed.Load(), CallRetries: s.dispatcher.retries.Load(),
	}
}

func (s *Service) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.cfg.DB.PingContext(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "database unreachable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	if s.cfg.Routes != nil {
		s.cfg.Routes(mux)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Seed makes sure each SKU has a stock row, creating missing ones with the
// given available quantity; existing rows are left as they are. d is db's
// dialect.
func Seed(ctx context.Context, db *sql.DB, d store.Dialect, skus map[string]int64) error {
	for sku, n := range skus {
		if _, err := db.ExecContext(ctx, database.Rebind(d,
			"INSERT INTO stock (sku, available, reserved, updated_at) VALUES (?, ?, 0, CURRENT_TIMESTAMP(6))"+keepExisting(d, "sku")),
			sku, n); err != nil {
			return fmt.Errorf("seed stock %s: %w", sku, err)
		}
	}
	return nil
}

// keepExisting ends an INSERT so that a row whose key (column) exists is
// left as it is.
func keepExisting(d store.Dialect, column string) string {
	if database.OnPostgres(d) {
		return " ON CONFLICT (" + column + ") DO NOTHING"
	}
	return " ON DUPLICATE KEY UPDATE " + column + " = " + column
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
