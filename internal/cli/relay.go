package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

// MetricsAddrDefault is where the relay serves /healthz, /readyz and
// /metrics unless told otherwise.
const MetricsAddrDefault = "127.0.0.1:9101"

// relayFlagOfField names the flag behind each relay.Config field, so a
// config error speaks the operator's language.
var relayFlagOfField = map[string]string{
	"ID": "--relay-id", "BatchSize": "--batch-size", "Lease": "--lease",
	"PollInterval": "--poll-interval", "MaxAttempts": "--max-attempts",
	"BackoffBase": "--backoff-base", "BackoffCap": "--backoff-cap",
	"OrderPolicy": "--order-policy", "Topics": "--topic", "DefaultTopic": "--default-topic",
	"ShutdownTimeout": "--shutdown-timeout",
}

func newRelayCommand() *cobra.Command {
	var (
		db          dbFlags
		kf          kafkaFlags
		cfg         relay.Config
		orderPolicy string
		topics      []string
		compression string
		linger      time.Duration
		maxRecord   int
		metricsAddr string
		migrate     bool
		cleanup     relay.CleanerConfig
		backlogTick time.Duration
	)
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Publish committed outbox events to Kafka (run several for availability)",
		Long: `Claims committed outbox events in leased batches (SELECT ... FOR UPDATE SKIP
LOCKED), publishes them to Kafka with acks=all and the idempotent producer,
and marks them published after the acknowledgement. Delivery is at least
once; per aggregate, events first reach Kafka in the order they were written.

Every flag has an environment variable (shown in its help). SIGTERM or SIGINT
stops claiming, finishes the batch in flight (or releases it) and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := kf.validate(); err != nil {
				return err
			}
			cfg.OrderPolicy = store.OrderPolicy(orderPolicy)
			routes, err := parseTopicRoutes(topics)
			if err != nil {
				return err
			}
			cfg.Topics = routes
			codecName := compression
			if _, err := kafka.ParseCompression(codecName); err != nil {
				return usageError{fmt.Errorf("--compression: %w", err)}
			}
			if linger < 0 {
				return usageError{fmt.Errorf("--linger: must not be negative, got %v", linger)}
			}
			if err := kafka.ValidateMaxRecordBytes(maxRecord); err != nil {
				return usageError{fmt.Errorf("--max-record-bytes: %w", err)}
			}
			if _, _, err := net.SplitHostPort(metricsAddr); err != nil {
				return usageError{fmt.Errorf("--metrics-addr: %w", err)}
			}
			if err := cfg.Validate(); err != nil {
				return relayConfigError(err)
			}
			if cleanup.Retention > 0 {
				if err := cleanup.Validate(); err != nil {
					return usageError{fmt.Errorf("--cleanup-*: %w", err)}
				}
			}
			logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
			slog.SetDefault(logger)
			cfg.Logger = logger
			reg := metrics.NewRegistry()
			cfg.Observer = metrics.NewRelay(reg)

			conn, err := db.open(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			if migrate {
				if _, err := migrations.Herald.Up(ctx, conn); err != nil {
					return err
				}
			} else if err := migrations.Herald.Check(ctx, conn); err != nil {
				return err
			}

			lease := cfg.Lease
			if lease == 0 {
				lease = relay.LeaseDefault
			}
			producer, err := kafka.NewProducer(kafka.ProducerConfig{
				Brokers: kf.brokers, ClientID: "herald-relay", Compression: codecName, Linger: linger,
				MaxRecordBytes: maxRecord,
				// A record must be acknowledged (or given up) well inside the
				// lease, so a healthy relay never loses its lease mid-batch.
				DeliveryTimeout: lease * 2 / 3, Logger: logger,
			})
			if err != nil {
				return err
			}
			defer producer.Close()

			st := mysql.NewStore(conn)
			r, err := relay.New(cfg, st, producer)
			if err != nil {
				return relayConfigError(err)
			}
			var cleaner *relay.Cleaner
			if cleanup.Retention > 0 {
				cleanup.Logger = logger
				if cleaner, err = relay.NewCleaner(cleanup, st); err != nil {
					return err
				}
			}

			ln, err := net.Listen("tcp", metricsAddr)
			if err != nil {
				return fmt.Errorf("--metrics-addr %s: %w", metricsAddr, err)
			}
			backlog := metrics.NewBacklog(reg, st, backlogTick, logger)
			backlogCtx, stopBacklog := context.WithCancel(ctx)
			defer stopBacklog()
			go backlog.Run(backlogCtx)

			mux := http.NewServeMux()
			mux.Handle("GET /metrics", metrics.Handler(reg))
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprintln(w, "ok")
			})
			mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
				pingCtx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
				defer cancel()
				if err := conn.PingContext(pingCtx); err != nil {
					http.Error(w, "mysql: not reachable", http.StatusServiceUnavailable)
					return
				}
				if err := producer.Ping(pingCtx); err != nil {
					http.Error(w, "kafka: not reachable", http.StatusServiceUnavailable)
					return
				}
				fmt.Fprintln(w, "ready")
			})
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go srv.Serve(ln)
			defer func() {
				shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				srv.Shutdown(shutCtx)
			}()
			logger.Info("relay listening", "metrics_addr", ln.Addr().String(), "mysql", mysql.Address(db.dsn),
				"kafka_brokers", strings.Join(kf.brokers, ","))
			if cleaner != nil {
				cleanCtx, stopCleaner := context.WithCancel(ctx)
				defer stopCleaner()
				go cleaner.Run(cleanCtx)
			}
			return r.Run(ctx)
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	kf.register(cmd, env)
	f := cmd.Flags()
	f.StringVar(&cfg.ID, "relay-id", "", "unique relay id written to locked_by (default <hostname>-<pid>)")
	f.IntVar(&cfg.BatchSize, "batch-size", relay.BatchSizeDefault, "events per claim")
	f.DurationVar(&cfg.Lease, "lease", relay.LeaseDefault, "how long claimed events belong to this relay")
	f.DurationVar(&cfg.PollInterval, "poll-interval", relay.PollIntervalDefault, "wait after a claim that found less than a full batch")
	f.IntVar(&cfg.MaxAttempts, "max-attempts", relay.MaxAttemptsDefault, "failed attempts before an event is quarantined")
	f.DurationVar(&cfg.BackoffBase, "backoff-base", relay.BackoffBaseDefault, "first retry delay (doubles per attempt)")
	f.DurationVar(&cfg.BackoffCap, "backoff-cap", relay.BackoffCapDefault, "longest retry delay")
	f.StringVar(&orderPolicy, "order-policy", string(relay.OrderPolicyDefault),
		"hold: later events of an aggregate wait behind a failing one; skip-quarantined: they pass a quarantined one")
	f.StringSliceVar(&topics, "topic", []string{"order=orders.v1"}, "route aggregate_type=topic (repeatable or comma-separated)")
	f.StringVar(&cfg.DefaultTopic, "default-topic", "", "topic for aggregate types no --topic names (empty: quarantine them)")
	f.StringVar(&compression, "compression", kafka.CompressionDefault, "producer compression: none, gzip, snappy, lz4, zstd")
	f.DurationVar(&linger, "linger", kafka.LingerDefault, "producer linger per partition batch")
	f.IntVar(&maxRecord, "max-record-bytes", kafka.MaxRecordBytesDefault,
		"largest record batch sent, uncompressed; topics' max.message.bytes must be at least this (herald topics describe checks)")
	f.StringVar(&metricsAddr, "metrics-addr", MetricsAddrDefault, "address of /healthz, /readyz and /metrics")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", relay.ShutdownTimeoutDefault, "on SIGTERM, wait this long for the batch in flight")
	f.BoolVar(&migrate, "migrate", false, "apply herald's schema migrations at start")
	f.DurationVar(&cleanup.Retention, "cleanup-retention", 0, "run cleanup in the background, keeping published events this long (0: off)")
	f.DurationVar(&cleanup.InboxRetention, "cleanup-inbox-retention", 0, "background cleanup also prunes consumed_events older than this (must exceed --cleanup-retention)")
	f.DurationVar(&backlogTick, "backlog-interval", metrics.BacklogIntervalDefault, "how often the backlog gauges are read from the database")
	f.DurationVar(&cleanup.Interval, "cleanup-interval", relay.CleanupIntervalDefault, "wait between background cleanup passes")
	for flag, name := range map[string]string{
		"relay-id": "HERALD_RELAY_ID", "batch-size": "HERALD_BATCH_SIZE", "lease": "HERALD_LEASE",
		"poll-interval": "HERALD_POLL_INTERVAL", "max-attempts": "HERALD_MAX_ATTEMPTS",
		"backoff-base": "HERALD_BACKOFF_BASE", "backoff-cap": "HERALD_BACKOFF_CAP",
		"order-policy": "HERALD_ORDER_POLICY", "topic": "HERALD_TOPICS", "default-topic": "HERALD_DEFAULT_TOPIC",
		"compression": "HERALD_COMPRESSION", "linger": "HERALD_LINGER", "metrics-addr": "HERALD_METRICS_ADDR",
		"max-record-bytes": "HERALD_MAX_RECORD_BYTES",
		"shutdown-timeout": "HERALD_SHUTDOWN_TIMEOUT", "migrate": "HERALD_MIGRATE",
		"cleanup-retention": "HERALD_CLEANUP_RETENTION", "cleanup-inbox-retention": "HERALD_CLEANUP_INBOX_RETENTION",
		"cleanup-interval": "HERALD_CLEANUP_INTERVAL", "backlog-interval": "HERALD_BACKLOG_INTERVAL",
	} {
		env[flag] = name
	}
	env.bind(cmd)
	return cmd
}

// parseTopicRoutes reads --topic aggregate_type=topic entries.
func parseTopicRoutes(entries []string) (map[string]string, error) {
	routes := map[string]string{}
	for _, e := range entries {
		typ, topic, ok := strings.Cut(e, "=")
		typ, topic = strings.TrimSpace(typ), strings.TrimSpace(topic)
		if !ok || typ == "" || topic == "" {
			return nil, usageError{fmt.Errorf("--topic: %q: want aggregate_type=topic", e)}
		}
		if err := kafka.ValidateTopicName(topic); err != nil {
			return nil, usageError{fmt.Errorf("--topic: %s: %w", e, err)}
		}
		if prev, dup := routes[typ]; dup && prev != topic {
			return nil, usageError{fmt.Errorf("--topic: aggregate type %q routed twice (%s and %s)", typ, prev, topic)}
		}
		routes[typ] = topic
	}
	return routes, nil
}

// relayConfigError rewrites relay.Config field names as flag names.
func relayConfigError(err error) error {
	var msgs []string
	for _, e := range flatten(err) {
		var ce *relay.ConfigError
		if errors.As(e, &ce) {
			if flag, ok := relayFlagOfField[ce.Field]; ok {
				msgs = append(msgs, flag+": "+ce.Msg)
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}

// flatten lists the leaves of a joined or wrapped error.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	if u := errors.Unwrap(err); u != nil {
		return flatten(u)
	}
	return []error{err}
}
