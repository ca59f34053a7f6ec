package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/connector"
	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql"
)

// MetricsAddrDefault is where the relay serves /healthz, /readyz and
// /metrics unless told otherwise.
const MetricsAddrDefault = "127.0.0.1:9101"

// relayFlagOfField names the flag behind each relay.ServiceConfig field, so
// a config error speaks the operator's language.
var relayFlagOfField = map[string]string{
	"Relay.ID": "--relay-id", "Relay.BatchSize": "--batch-size", "Relay.Lease": "--lease",
	"Relay.PollInterval": "--poll-interval", "Relay.MaxAttempts": "--max-attempts",
	"Relay.BackoffBase": "--backoff-base", "Relay.BackoffCap": "--backoff-cap",
	"Relay.OrderPolicy": "--order-policy", "Relay.Topics": "--topic", "Relay.DefaultTopic": "--default-topic",
	"Relay.ShutdownTimeout": "--shutdown-timeout", "Cleaner.Retention": "--cleanup-retention",
	"Cleaner.InboxRetention": "--cleanup-inbox-retention", "Cleaner.Interval": "--cleanup-interval",
	"BacklogInterval": "--backlog-interval", "MetricsAddr": "--metrics-addr",
}

// relayNoZeroFlags are the flags whose relay.ServiceConfig field reads 0 (or
// "") as "the default": every one has an explicit default, so a 0 can only
// have been given on purpose, and is refused rather than silently replaced.
var relayNoZeroFlags = []string{
	"batch-size", "lease", "poll-interval", "max-attempts", "backoff-base", "backoff-cap",
	"order-policy", "shutdown-timeout", "cleanup-interval", "backlog-interval", "metrics-addr",
}

// relayOptions are herald relay's flags. validate checks them all at once,
// each problem naming its flag; run wires relay.Service from them and runs
// it until the context ends.
type relayOptions struct {
	cmd *cobra.Command // which flags were given, and by which variable

	db          dbFlags
	kafka       kafkaFlags
	svc         relay.ServiceConfig
	orderPolicy string
	topics      []string
	compression string
	linger      time.Duration
	maxRecord   int
	migrate     bool
	source      string
	slot        slotFlag
	mapping     mappingFlags
	records     recordFlags

	// What validate read, for run.
	kafkaOpts []kgo.Opt
	mapped    *connector.Settings
}

func newRelayCommand() *cobra.Command {
	o := &relayOptions{}
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Publish committed outbox events to Kafka (run several for availability)",
		Long: `Publishes committed outbox events to Kafka with acks=all and the idempotent
producer, and marks them published after the acknowledgement. Delivery is at
least once; per aggregate, events first reach Kafka in the order they were
written.

--source poll (the default): relays share the outbox by buckets of
aggregates (leased in the database) and claim each bucket's ready events.
--source binlog (MariaDB/MySQL): one relay streams committed inserts from
the binlog as they commit and hands what it cannot publish to the polling
path; the other binlog relays stand by and take over within --lease
(docs/design.md, section 9). It checks at start that it can stream, and
names each missing setting with its fix:

  server settings  log_bin on, binlog_format=ROW, binlog_row_image=FULL,
                   binlog_row_metadata=FULL (MariaDB 10.5+, MySQL 8.0.1+)
  grants           REPLICATION SLAVE, and BINLOG MONITOR on MariaDB
                   (REPLICATION CLIENT on MySQL and on MariaDB before
                   10.5), besides all rights on the outbox's database

The local stack's MariaDB has them (stack/mariadb/my.cnf, stack/up.sh);
the README's "Your own database and Kafka" lists every grant herald needs.

--source wal (PostgreSQL 14+): the same, from a logical replication slot
(--slot, default herald_<database>) through the built-in pgoutput plugin
and a publication of outbox_events' inserts. It needs

  server settings  wal_level = logical, max_replication_slots and
                   max_wal_senders of at least 1 each (a restart applies them)
  role             the REPLICATION attribute; owning outbox_events (as the
                   role that ran herald migrate does) to create the
                   publication, or run herald stream setup as its owner

It creates the publication and the slot when missing; herald stream status
shows the slot's retained WAL, herald stream drop removes both
(docs/postgres-stream.md).

Every flag has an environment variable (shown in its help). SIGTERM or SIGINT
stops claiming, finishes the batch in flight (or releases it) and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	o.register(cmd)
	return cmd
}

// register adds the relay's flags to cmd, bound to o.
func (o *relayOptions) register(cmd *cobra.Command) {
	o.cmd = cmd
	env := envFlags{}
	o.db.register(cmd, env)
	o.kafka.register(cmd, env)
	svc := &o.svc
	f := cmd.Flags()
	f.StringVar(&svc.Relay.ID, "relay-id", "", "unique relay id, the owner of its buckets in outbox_buckets (default <hostname>-<pid>)")
	f.IntVar(&svc.Relay.BatchSize, "batch-size", relay.BatchSizeDefault, "events per claim")
	f.DurationVar(&svc.Relay.Lease, "lease", relay.LeaseDefault, "how long the relay's buckets stay its own without renewal (takeover time after a crash)")
	f.DurationVar(&svc.Relay.PollInterval, "poll-interval", relay.PollIntervalDefault, "wait after a claim that found nothing")
	f.IntVar(&svc.Relay.MaxAttempts, "max-attempts", relay.MaxAttemptsDefault, "failed attempts before an event is quarantined")
	f.DurationVar(&svc.Relay.BackoffBase, "backoff-base", relay.BackoffBaseDefault, "first retry delay (doubles per attempt)")
	f.DurationVar(&svc.Relay.BackoffCap, "backoff-cap", relay.BackoffCapDefault, "longest retry delay")
	f.StringVar(&o.orderPolicy, "order-policy", string(relay.OrderPolicyDefault),
		"hold: later events of an aggregate wait behind a failing one; skip-quarantined: they pass a quarantined one")
	f.StringSliceVar(&o.topics, "topic", defaultRoutes(), "route aggregate_type=topic (repeatable or comma-separated)")
	f.StringVar(&svc.Relay.DefaultTopic, "default-topic", "", "topic for aggregate types no --topic names (empty: quarantine them)")
	f.StringVar(&o.compression, "compression", kafka.CompressionDefault, "producer compression: none, gzip, snappy, lz4, zstd")
	f.DurationVar(&o.linger, "linger", kafka.LingerDefault, "producer linger per partition batch (0: send at once; --source binlog and wal default to 0, the lowest latency; under load a few ms fill the produce requests and cut the relay's and the broker's CPU per event: docs/benchmarks.md)")
	f.StringVar(&o.source, "source", sourcePoll, "where events come from: poll (claim ready rows), binlog (stream committed inserts from MariaDB/MySQL's binlog) or wal (from PostgreSQL's WAL, a logical replication slot); a stream has one relay streaming, the others stand by")
	o.slot.register(cmd, env)
	o.mapping.register(cmd, env)
	o.records.register(cmd, env)
	f.IntVar(&o.maxRecord, "max-record-bytes", kafka.MaxRecordBytesDefault,
		"largest record batch sent, uncompressed; topics' max.message.bytes must be at least this (herald topics describe checks)")
	f.StringVar(&svc.MetricsAddr, "metrics-addr", MetricsAddrDefault, "address of /healthz, /readyz and /metrics")
	f.DurationVar(&svc.Relay.ShutdownTimeout, "shutdown-timeout", relay.ShutdownTimeoutDefault, "on SIGTERM, wait this long for the batch in flight")
	f.BoolVar(&o.migrate, "migrate", false, "apply herald's schema migrations at start")
	f.DurationVar(&svc.Cleaner.Retention, "cleanup-retention", 0, "run cleanup in the background, keeping published events this long (0: off)")
	f.DurationVar(&svc.Cleaner.InboxRetention, "cleanup-inbox-retention", 0, "background cleanup also prunes consumed_events older than this (must exceed --cleanup-retention)")
	f.DurationVar(&svc.BacklogInterval, "backlog-interval", metrics.BacklogIntervalDefault, "how often the backlog gauges are read from the database")
	f.DurationVar(&svc.Cleaner.Interval, "cleanup-interval", relay.CleanupIntervalDefault, "wait between background cleanup passes")
	env.bind(cmd)
}

// validate checks every flag before anything connects and reports every
// problem at once, as a usage error naming each flag (or its variable).
// It keeps what it read (the routes, the record formats, the Kafka
// options, the mapping) for run.
func (o *relayOptions) validate() error {
	problems := refuseZero(o.cmd, relayNoZeroFlags)
	var err error
	if o.kafkaOpts, err = o.kafka.options(); err != nil {
		problems = append(problems, err.Error())
	}
	o.svc.Relay.OrderPolicy = store.OrderPolicy(o.orderPolicy)
	if o.svc.Relay.Topics, err = parseTopicRoutes(o.topics); err != nil {
		problems = append(problems, err.Error())
	}
	if _, err := kafka.ParseCompression(o.compression); err != nil {
		problems = append(problems, "--compression: "+err.Error())
	}
	if o.linger < 0 {
		problems = append(problems, fmt.Sprintf("--linger: must not be negative, got %v", o.linger))
	}
	if o.source != sourcePoll && o.source != sourceBinlog && o.source != sourceWAL {
		problems = append(problems, fmt.Sprintf("--source: want %s, %s or %s, got %q", sourcePoll, sourceBinlog, sourceWAL, o.source))
	}
	if url, err := o.db.url(); err == nil {
		switch {
		case o.source == sourceBinlog && database.IsPostgres(url):
			problems = append(problems, "--source binlog: streams the MariaDB/MySQL binlog; on PostgreSQL use --source wal (or poll)")
		case o.source == sourceWAL && !database.IsPostgres(url):
			problems = append(problems, "--source wal: streams PostgreSQL's WAL; on MariaDB/MySQL use --source binlog (or poll)")
		}
	}
	if o.cmd.Flags().Changed("slot") && o.source != sourceWAL {
		problems = append(problems, "--slot: only --source wal streams from a replication slot")
	}
	if err := kafka.ValidateMaxRecordBytes(o.maxRecord); err != nil {
		problems = append(problems, "--max-record-bytes: "+err.Error())
	}
	if o.mapped, err = o.mapping.settings(); err != nil {
		problems = append(problems, err.Error())
	}
	var formatProblems []string
	o.svc.Relay.Records, formatProblems = o.records.config(o.mapped)
	problems = append(problems, formatProblems...)
	if err := o.svc.Validate(); err != nil {
		// The record formats' problems are in formatProblems, under their
		// flags' names.
		problems = append(problems, flagMessages(withoutField(err, "Relay.Records."), relayFlagOfField)...)
	}
	if len(problems) > 0 {
		return usageError{errors.New(strings.Join(problems, "; "))}
	}
	return nil
}

// producerLinger is --linger as kafka.ProducerConfig reads it: -1 for no
// lingering (its 0 is the default), which is also a stream's default: a
// stream publishes as events commit, and waiting for company only adds
// latency.
func (o *relayOptions) producerLinger() time.Duration {
	if o.linger == 0 || o.source != sourcePoll && !o.cmd.Flags().Changed("linger") {
		return -1
	}
	return o.linger
}

// run connects to the database (applying or checking herald's schema),
// builds the stream source --source names, the producer and the
// relay.Service, and runs the service until ctx ends.
func (o *relayOptions) run(ctx context.Context) error {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(logger)
	o.svc.Logger = logger
	// The relay's own UPDATEs (marks, holds, failures) need not copy the
	// row into the binlog, where the server allows it.
	o.db.opts.MinimalRowImage = true
	conn, err := o.db.open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !database.OnPostgres(o.db.dialect()) {
		logRowImage(ctx, conn, logger)
	}
	if o.migrate {
		if _, err := migrations.Herald.Up(ctx, conn); err != nil {
			return err
		}
	} else if err := migrations.Herald.Check(ctx, conn); err != nil {
		return err
	}
	if err := checkInstalledMapping(ctx, conn, o.mapped); err != nil {
		return err
	}
	if o.svc.Relay.Stream, err = o.stream(ctx, conn, logger); err != nil {
		return err
	}
	producer, err := kafka.NewProducer(kafka.ProducerConfig{
		Brokers: o.kafka.brokers, ClientID: "herald-relay", Compression: o.compression, Linger: o.producerLinger(),
		MaxRecordBytes: o.maxRecord,
		// A record must be acknowledged (or given up) well inside the
		// lease, so a healthy relay never loses its lease mid-batch.
		DeliveryTimeout: o.svc.Relay.Lease * 2 / 3, Logger: logger, ClientOptions: o.kafkaOpts,
		RecordTimestamps: o.svc.Relay.Records.Timestamped(),
	})
	if err != nil {
		return err
	}
	defer producer.Close()

	s, err := relay.NewService(o.svc, store.New(conn, o.db.dialect()), producer)
	if err != nil {
		return err
	}
	dsn, _ := o.db.url()
	logger.Info("relay connecting", "database", database.Address(dsn), "database_tls", database.TLSMode(dsn, o.db.opts),
		"kafka_brokers", strings.Join(o.kafka.brokers, ","), "kafka_security", o.kafka.sec)
	err = s.Run(ctx)
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "listen" {
		return fmt.Errorf("--metrics-addr %s: %w", o.svc.MetricsAddr, err)
	}
	return err
}

// stream returns the change-stream source of --source (nil for poll),
// checked against the server and herald's account.
func (o *relayOptions) stream(ctx context.Context, conn *sql.DB, logger *slog.Logger) (changestream.Source, error) {
	switch o.source {
	case sourceBinlog:
		return newBinlogSource(ctx, conn, &o.db, logger)
	case sourceWAL:
		return newWALSource(ctx, conn, &o.db, o.slot, logger)
	}
	return nil, nil
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

// refuseZero reports each of names given as 0 or empty, naming the
// environment variable when it, not the command line, gave the value. The
// flags' defaults are never 0, so such a value was meant, and the library
// would read it as "use the default".
func refuseZero(cmd *cobra.Command, names []string) []string {
	var problems []string
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		v := f.Value.String()
		if v != "0" && v != "0s" && v != "" {
			continue
		}
		who := flagSource(cmd, name)
		if v == "" {
			v = "empty"
		}
		problems = append(problems, fmt.Sprintf("%s: must not be %s; leave it out for the default, %s", who, v, f.DefValue))
	}
	return problems
}

// withoutField returns the errors of a config validation less those of
// the fields under prefix.
func withoutField(err error, prefix string) error {
	var kept config.Errors
	for _, e := range config.Leaves(err) {
		var ce *config.Error
		if errors.As(e, &ce) && strings.HasPrefix(ce.Field, prefix) {
			continue
		}
		kept = append(kept, e)
	}
	return kept.Err()
}

// flagMessages renders a config validation's errors with flag names in
// place of field names.
func flagMessages(err error, flagOfField map[string]string) []string {
	var msgs []string
	for _, e := range config.Leaves(err) {
		var ce *config.Error
		if errors.As(e, &ce) {
			if flag, ok := flagOfField[ce.Field]; ok {
				msgs = append(msgs, flag+": "+ce.Msg)
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	return msgs
}

// logRowImage says, on MySQL/MariaDB with a binlog, whether the relay's
// UPDATEs write a minimal row image or copy whole rows (it lacks the
// privilege to set its sessions' binlog_row_image: docs/security.md).
func logRowImage(ctx context.Context, db *sql.DB, logger *slog.Logger) {
	image, logBin, err := mysql.RowImage(ctx, db)
	switch {
	case err != nil || !logBin: // no binlog to write
	case strings.EqualFold(image, "MINIMAL"):
		logger.Info("the relay's updates write a minimal row image to the binlog", "binlog_row_image", image)
	default:
		logger.Warn("the relay's updates (marks, holds, failures) copy whole rows into the binlog: "+
			"GRANT BINLOG ADMIN (MariaDB) or SESSION_VARIABLES_ADMIN (MySQL 8) to herald's user to write only "+
			"the columns they change (docs/security.md)", "binlog_row_image", image)
	}
}
