package inbox

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// Defaults of Config.
const (
	// BatchSizeDefault is Config.BatchSize's default: one record per
	// transaction.
	BatchSizeDefault = 1
	// MaxAttemptsDefault is Config.MaxAttempts's default.
	MaxAttemptsDefault = 5
	// RetryBackoffDefault is Config.RetryBackoff's default.
	RetryBackoffDefault = 100 * time.Millisecond
	// RetryBackoffMaxDefault is Config.RetryBackoffMax's default.
	RetryBackoffMaxDefault = 5 * time.Second
	// TxTimeoutDefault is Config.TxTimeout's default.
	TxTimeoutDefault = 30 * time.Second
	// ConsumerNameMaxLen is the length of consumed_events.consumer_name.
	ConsumerNameMaxLen = 128
)

// consumerNamePattern keeps a consumer name usable inside a Kafka topic name
// (the default dead-letter topic) and a metric label.
var consumerNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Config shapes a Consumer. ConsumerName, Brokers, Topics, DB, Dialect and
// Handler are required, and Registry with the herald format; zero values
// elsewhere mean defaults. New reports every invalid field at once, each as
// a *ConfigError.
type Config struct {
	// ConsumerName identifies the consumer in consumed_events: two
	// consumers with different names each apply every event once. Letters,
	// digits, '.', '_' and '-', at most 128 characters. Required.
	ConsumerName string
	// Brokers are Kafka's seed brokers. Required.
	Brokers []string
	// Topics are consumed. Required.
	Topics []string
	// Group is the Kafka consumer group. Defaults to ConsumerName.
	Group string
	// DB is the consumer's own database, holding consumed_events (herald's
	// migrations) and the handler's tables. Required.
	DB *sql.DB
	// Dialect is DB's dialect, as mysql.Dialect{}: it records event ids
	// and recognises transient errors. Required.
	Dialect store.InboxDialect
	// Format is the shape of the records: where the event id, type and
	// data are. FormatHerald reads herald's envelope and decodes its data
	// with Registry. FormatDebezium reads Debezium's Outbox Event Router
	// records: the event id from the "id" header, the type from
	// TypeHeader, the value as Message.Data. FormatCloudEvents reads
	// CloudEvents 1.0 records, binary or structured mode: id, type and
	// time from the ce_* headers or the JSON event, the data as
	// Message.Data. Whatever the format, a record without an event id is
	// dead-lettered with class missing_id and one whose id is not a UUID
	// with class malformed; the inbox, the transaction and the offsets work
	// the same. Defaults to FormatHerald.
	Format Format
	// Registry decodes herald envelopes by (type, version) into
	// Message.Payload. Only the herald format's records carry a type and
	// version to decode by: with the other formats it must be nil, and the
	// handler reads Message.Data, the raw bytes. Required with
	// FormatHerald.
	Registry *envelope.Registry
	// TypeHeader names the record header holding the event's type, for
	// FormatDebezium (Debezium setups often place the type column as the
	// header "eventType" with table.fields.additional.placement); its value
	// becomes Message.Type. Only FormatDebezium reads it. Defaults to "":
	// Message.Type is empty.
	TypeHeader string
	// Handler applies one event inside the inbox's transaction. Required.
	Handler Handler
	// AfterCommit, if set, is called with the messages whose transaction
	// just committed (duplicates excluded), before their offsets are
	// committed. It runs on the partition's goroutine: it should only hand
	// work off (for example, wake a dispatcher of external calls). A crash
	// can skip it, so the handler must leave durable traces of any follow-up
	// work. Defaults to nil.
	AfterCommit func(ctx context.Context, msgs []Message)
	// BatchSize is how many records of a partition share one transaction.
	// With more than one, a failing record makes the batch fall back to one
	// record per transaction, so it is isolated and retried alone. Defaults
	// to 1.
	BatchSize int
	// MaxAttempts is how many times the handler may fail on a record
	// before it is dead-lettered. Transient database errors (deadlocks, lock
	// wait timeouts, lost connections) are retried without limit and do not
	// count. Defaults to 5.
	MaxAttempts int
	// RetryBackoff is the wait before the first retry; it doubles per retry
	// up to RetryBackoffMax, with ±20 % jitter. Defaults to 100 ms.
	RetryBackoff time.Duration
	// RetryBackoffMax caps the wait between retries. Defaults to 5 s.
	RetryBackoffMax time.Duration
	// TxTimeout bounds one transaction (inbox row, handler, commit).
	// Defaults to 30 s.
	TxTimeout time.Duration
	// TxIsolation is the transactions' isolation level. Defaults to
	// sql.LevelReadCommitted (the zero value, sql.LevelDefault, means it):
	// inbox inserts take no gap locks.
	TxIsolation sql.IsolationLevel
	// DLQTopic names the dead-letter topic of a topic. Defaults to
	// kafka.DLQTopicName: "<topic>.dlq.<consumer name>".
	DLQTopic func(topic string) string
	// DLQPartitions and DLQReplicationFactor shape dead-letter topics the
	// consumer creates. Default to 1 partition and the brokers' default
	// replication factor.
	DLQPartitions        int32
	DLQReplicationFactor int16
	// MaxPollRecords bounds the records one poll hands out. Defaults to
	// 500.
	MaxPollRecords int
	// StartAt applies to partitions the group has no committed offset for
	// (a new group): consumption starts at the first record stamped at or
	// after StartAt. Use it with a new Group to replay; the inbox still
	// drops every event ConsumerName already applied. Defaults to the zero
	// time: the start of the log.
	StartAt time.Time
	// RateLimit caps the records per second this consumer processes,
	// across partitions, so a replay never competes with live traffic for
	// downstream capacity. Defaults to 0: no limit.
	RateLimit float64
	// SessionTimeout is how long the group waits for a silent member before
	// giving its partitions away. Defaults to 45 s (at least 6 s).
	SessionTimeout time.Duration
	// Observer receives every outcome, for metrics. Defaults to a no-op;
	// Stats is kept either way.
	Observer Observer
	// Logger receives retries, dead letters and rebalances. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// KafkaOptions are added to the franz-go clients' options (TLS, SASL).
	// Defaults to none.
	KafkaOptions []kgo.Opt
}

func (c Config) withDefaults() Config {
	if c.Format == "" {
		c.Format = FormatHerald
	}
	if c.Group == "" {
		c.Group = c.ConsumerName
	}
	if c.BatchSize == 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttemptsDefault
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = RetryBackoffDefault
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = RetryBackoffMaxDefault
	}
	if c.TxTimeout == 0 {
		c.TxTimeout = TxTimeoutDefault
	}
	if c.TxIsolation == sql.LevelDefault {
		c.TxIsolation = sql.LevelReadCommitted
	}
	if c.DLQTopic == nil {
		name := c.ConsumerName
		c.DLQTopic = func(topic string) string { return kafka.DLQTopicName(topic, name) }
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ConfigError is one invalid Config field; New joins one per invalid field
// (errors.As finds them). Its Field names the field and Msg says what is
// wrong; the same type is every herald package's ConfigError.
type ConfigError = config.Error

// validate reports every invalid field of c at once, each as a
// *ConfigError (wrapped as "inbox config: ..."); zero fields are valid (they
// take their defaults).
func (c Config) validate() error {
	var errs config.Errors
	switch {
	case c.ConsumerName == "":
		errs.Add("ConsumerName", "is required")
	case len(c.ConsumerName) > ConsumerNameMaxLen:
		errs.Add("ConsumerName", "at most %d characters, got %d", ConsumerNameMaxLen, len(c.ConsumerName))
	case !consumerNamePattern.MatchString(c.ConsumerName):
		errs.Add("ConsumerName", "%q may hold only letters, digits, '.', '_' and '-'", c.ConsumerName)
	}
	if len(c.Brokers) == 0 {
		errs.Add("Brokers", "at least one broker is required")
	}
	if len(c.Topics) == 0 {
		errs.Add("Topics", "at least one topic is required")
	}
	if slices.Contains(c.Topics, "") {
		errs.Add("Topics", "has an empty topic name")
	}
	if c.DB == nil {
		errs.Add("DB", "is required")
	}
	if c.Dialect == nil {
		errs.Add("Dialect", "is required (mysql.Dialect{} for MySQL/MariaDB)")
	}
	switch format := c.Format; {
	case format == "" || format == FormatHerald:
		if c.Registry == nil {
			errs.Add("Registry", "is required")
		}
	case !slices.Contains(Formats, format):
		errs.Add("Format", "unknown format %.40q (want %s, %s or %s)", string(format), FormatHerald, FormatDebezium, FormatCloudEvents)
	case c.Registry != nil:
		errs.Add("Registry", "must be nil with the %s format: only the herald format's records carry a type and version to decode by (the handler reads Message.Data)", format)
	}
	if c.TypeHeader != "" && c.Format != FormatDebezium {
		errs.Add("TypeHeader", "is read only with the %s format (the %s and %s formats carry the type in the record itself)", FormatDebezium, FormatHerald, FormatCloudEvents)
	}
	if c.Handler == nil {
		errs.Add("Handler", "is required")
	}
	if c.BatchSize < 0 {
		errs.Add("BatchSize", "must not be negative, got %d", c.BatchSize)
	}
	if c.MaxAttempts < 0 {
		errs.Add("MaxAttempts", "must not be negative, got %d", c.MaxAttempts)
	}
	if c.RetryBackoff < 0 {
		errs.Add("RetryBackoff", "must not be negative, got %s", c.RetryBackoff)
	}
	if c.RetryBackoffMax < 0 {
		errs.Add("RetryBackoffMax", "must not be negative, got %s", c.RetryBackoffMax)
	}
	if c.RetryBackoffMax > 0 && c.RetryBackoff > c.RetryBackoffMax {
		errs.Add("RetryBackoff", "(%s) must not exceed RetryBackoffMax (%s)", c.RetryBackoff, c.RetryBackoffMax)
	}
	if c.TxTimeout < 0 {
		errs.Add("TxTimeout", "must not be negative, got %s", c.TxTimeout)
	}
	if c.DLQPartitions < 0 {
		errs.Add("DLQPartitions", "must not be negative, got %d", c.DLQPartitions)
	}
	if c.MaxPollRecords < 0 {
		errs.Add("MaxPollRecords", "must not be negative, got %d", c.MaxPollRecords)
	}
	if c.RateLimit < 0 {
		errs.Add("RateLimit", "must not be negative, got %g", c.RateLimit)
	}
	if c.SessionTimeout < 0 {
		errs.Add("SessionTimeout", "must not be negative, got %s", c.SessionTimeout)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("inbox config: %w", err)
	}
	return nil
}
