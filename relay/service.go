package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/metrics"
)

const (
	// readyTimeout bounds /readyz's pings of the database and Kafka.
	readyTimeout = 2 * time.Second
	// httpShutdownTimeout bounds how long Run waits for requests in flight
	// once the relay has stopped.
	httpShutdownTimeout = 5 * time.Second
)

// ServiceStore is what a Service needs from the database: the relay's
// claims and settlements, the cleaner's deletes, the backlog sampler's
// readings and /readyz's ping. *store.Store implements it.
type ServiceStore interface {
	Store
	CleanupStore
	metrics.BacklogReader
	Ping(ctx context.Context) error
}

// ServiceProducer is the producer a Service publishes with and whose
// brokers /readyz asks; the *kgo.Client of kafka.NewProducer implements it.
type ServiceProducer interface {
	Producer
	Ping(ctx context.Context) error
}

// ServiceConfig shapes a Service. Zero fields take their defaults; Validate
// reports every invalid field at once, nested ones as "Relay.Lease" or
// "Cleaner.Interval".
type ServiceConfig struct {
	// Relay shapes the relay. Its Logger defaults to Logger and its
	// Observer to the relay's collectors on Registry. Defaults to Config's
	// defaults.
	Relay Config
	// Cleaner shapes the background deletion of published events older
	// than Cleaner.Retention; a zero Retention turns it off. Defaults to
	// off.
	Cleaner CleanerConfig
	// BacklogInterval is how often the backlog gauges are read from the
	// database. Defaults to 15s.
	BacklogInterval time.Duration
	// MetricsAddr is the host:port that serves /healthz, /readyz and
	// /metrics; empty serves none. Defaults to "".
	MetricsAddr string
	// Registry holds the relay's and the backlog's collectors and is what
	// /metrics serves; it may hold one Service's collectors. Defaults to
	// metrics.NewRegistry() (Go runtime and process collectors included).
	Registry *metrics.Registry
	// Logger receives the service's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c ServiceConfig) withDefaults() ServiceConfig {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Relay.Logger == nil {
		c.Relay.Logger = c.Logger
	}
	if c.Cleaner.Logger == nil {
		c.Cleaner.Logger = c.Logger
	}
	if c.BacklogInterval == 0 {
		c.BacklogInterval = metrics.BacklogIntervalDefault
	}
	return c
}

// Validate checks c (zero fields taking their defaults); each error is a
// *ConfigError naming the field. NewService calls it too.
func (c ServiceConfig) Validate() error {
	return c.withDefaults().validate()
}

func (c ServiceConfig) validate() error {
	var errs config.Errors
	errs.Nest("Relay", c.Relay.withDefaults().validate())
	switch {
	case c.Cleaner.Retention < 0:
		errs.Add("Cleaner.Retention", "must not be negative, got %v (0 turns cleanup off)", c.Cleaner.Retention)
	case c.Cleaner.Retention == 0 && c.Cleaner.InboxRetention != 0:
		errs.Add("Cleaner.InboxRetention", "needs Cleaner.Retention: cleanup is off")
	case c.Cleaner.Retention > 0:
		errs.Nest("Cleaner", c.Cleaner.withDefaults().validate())
	}
	if c.BacklogInterval < 0 {
		errs.Add("BacklogInterval", "must not be negative, got %v", c.BacklogInterval)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs.Add("MetricsAddr", "%v", err)
		}
	}
	return errs.Err()
}

// Service is a relay with everything `herald relay` runs around it: the
// backlog sampler, the optional cleaner, Prometheus collectors and the
// /healthz, /readyz and /metrics endpoints. One constructor wires them; Run
// starts them and waits for all of them on shutdown.
type Service struct {
	cfg      ServiceConfig
	store    ServiceStore
	relay    *Relay
	cleaner  *Cleaner // nil when cleanup is off
	backlog  *metrics.Backlog
	producer ServiceProducer
	registry *metrics.Registry
	log      *slog.Logger
}

// NewService checks cfg and wires a Service over st, publishing with
// producer. The producer's delivery timeout should be shorter than the
// lease (kafka.ProducerConfig.DeliveryTimeout; `herald relay` uses two
// thirds of it). The caller keeps st's database and the producer, and
// closes them after Run returns.
func NewService(cfg ServiceConfig, st ServiceStore, producer ServiceProducer) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("relay service config: %w", err)
	}
	// Collectors are registered only once the config is known to be valid,
	// so a caller's registry is left untouched by a refused config.
	reg := cfg.Registry
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	if cfg.Relay.Observer == nil {
		cfg.Relay.Observer = metrics.NewRelay(reg)
	}
	r, err := New(cfg.Relay, st, producer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, store: st, relay: r, producer: producer, registry: reg, log: cfg.Logger,
		backlog: metrics.NewBacklog(reg, st, cfg.BacklogInterval, cfg.Logger),
	}
	if cfg.Cleaner.Retention > 0 {
		if cfg.Cleaner.Observer == nil {
			cfg.Cleaner.Observer = metrics.NewCleanup(reg)
		}
		if s.cleaner, err = NewCleaner(cfg.Cleaner, st); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run starts the relay, the backlog sampler, the cleaner (when on) and the
// HTTP endpoints (when MetricsAddr is set). Cancelling ctx stops claiming
// and stops the sampler and the cleaner; the relay finishes (or releases)
// its batch in flight, the endpoints answer until then, and Run returns
// once every goroutine it started has returned. It returns an error when
// MetricsAddr cannot be listened on (before anything starts) or the HTTP
// server fails (the relay then stops as on cancel). A Service runs once.
func (s *Service) Run(ctx context.Context) error {
	var ln net.Listener
	if s.cfg.MetricsAddr != "" {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.MetricsAddr); err != nil {
			return fmt.Errorf("listen on %s: %w", s.cfg.MetricsAddr, err)
		}
		s.log.Info("relay listening", "metrics_addr", ln.Addr().String())
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		wg       sync.WaitGroup
		serveErr error // written before wg.Done, read after wg.Wait
	)
	wg.Go(func() { s.backlog.Run(runCtx) })
	if s.cleaner != nil {
		wg.Go(func() { s.cleaner.Run(runCtx) })
	}
	var srv *http.Server
	if ln != nil {
		srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
		wg.Go(func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				serveErr = fmt.Errorf("http server on %s: %w", ln.Addr(), err)
				stop(serveErr)
			}
		})
	}

	relayErr := s.relay.Run(runCtx)
	stop(nil)
	if srv != nil {
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutCtx); err != nil {
			srv.Close() // requests still running after the timeout are cut
		}
	}
	wg.Wait()
	return errors.Join(relayErr, serveErr)
}

// handler serves /healthz (the process answers), /readyz (the database and
// Kafka answer, and no configuration failure stops publishing) and
// /metrics.
func (s *Service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(s.registry))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		pingCtx, cancel := context.WithTimeout(req.Context(), readyTimeout)
		defer cancel()
		if err := s.store.Ping(pingCtx); err != nil {
			http.Error(w, "database: not reachable", http.StatusServiceUnavailable)
			return
		}
		// Kafka may answer a ping and still refuse what the relay does:
		// its credentials, its certificate or a topic (docs/security.md).
		if err := s.relay.ConfigurationFailure(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := s.producer.Ping(pingCtx); err != nil {
			http.Error(w, "kafka: not reachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
