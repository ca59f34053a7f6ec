package relay

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

// Defaults of Config's fields.
const (
	BatchSizeDefault       = 500
	LeaseDefault           = 8 * time.Second
	PollIntervalDefault    = 50 * time.Millisecond
	MaxAttemptsDefault     = 25
	BackoffBaseDefault     = time.Second
	BackoffCapDefault      = 300 * time.Second
	ShutdownTimeoutDefault = 15 * time.Second
	OrderPolicyDefault     = store.OrderHold
)

// TopicsDefault routes aggregate type "order" to topic "orders.v1".
var TopicsDefault = map[string]string{"order": "orders.v1"}

// Config shapes a Relay. Zero fields take their defaults; Validate reports
// every invalid field at once.
type Config struct {
	// ID names this relay in the bucket table and in logs; it must be
	// unique among running relays. Defaults to "<hostname>-<pid>".
	ID string
	// BatchSize is the most events one claim takes. Defaults to 500.
	BatchSize int
	// Lease is how long the relay's buckets stay its own without renewal
	// (it renews them every third of it): after a crash, the other relays
	// take them over within about one lease. Publishing a batch is bounded
	// by it. Defaults to 8s.
	Lease time.Duration
	// PollInterval is the wait after a claim that found nothing; a claim
	// that found events is followed by the next at once. Defaults to 50ms.
	PollInterval time.Duration
	// MaxAttempts quarantines an event whose publication failed this many
	// times. A configuration failure (kafka.IsConfiguration: credentials,
	// certificates, ACLs, a topic Kafka refuses) is not the event's and
	// never counts. Defaults to 25 (about 1.5 hours of retries).
	MaxAttempts int
	// BackoffBase is the first retry delay; it doubles per attempt. Defaults
	// to 1s.
	BackoffBase time.Duration
	// BackoffCap is the longest retry delay. Defaults to 300s.
	BackoffCap time.Duration
	// OrderPolicy is what later events of an aggregate do while an earlier
	// one cannot be published. Defaults to store.OrderHold.
	OrderPolicy store.OrderPolicy
	// Topics maps aggregate types to topics. Defaults to TopicsDefault.
	Topics map[string]string
	// DefaultTopic receives aggregate types Topics does not name; empty
	// means such events are quarantined with class no_route. Defaults to "".
	DefaultTopic string
	// Records chooses each aggregate type's record format and shapes it
	// (docs/design.md, section 10.2). Topics and DefaultTopic route the
	// herald and cloudevents formats; the debezium format routes as
	// Records.Debezium.RouteTopicReplacement says. Defaults to herald's
	// format for every aggregate type.
	Records record.FormatConfig
	// ShutdownTimeout bounds how long Run, once its context is cancelled,
	// waits for the batch in flight before releasing its leases. Defaults to
	// 15s.
	ShutdownTimeout time.Duration
	// Logger receives the relay's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Stream, when set, makes the relay a stream relay: it competes for the
	// stream lease and, while it leads, publishes the change stream's
	// events as they are committed (docs/design.md, "Change-stream
	// sources"; binlog.NewSource, wal.NewSource). Defaults to nil: the
	// relay polls.
	Stream changestream.Source
	// Observer is told about claims, publications and failures (metrics).
	// Defaults to none.
	Observer Observer
}

func (c Config) withDefaults() Config {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.BatchSize == 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.Lease == 0 {
		c.Lease = LeaseDefault
	}
	if c.PollInterval == 0 {
		c.PollInterval = PollIntervalDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttemptsDefault
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = BackoffBaseDefault
	}
	if c.BackoffCap == 0 {
		c.BackoffCap = BackoffCapDefault
	}
	if c.OrderPolicy == "" {
		c.OrderPolicy = OrderPolicyDefault
	}
	if c.Topics == nil {
		c.Topics = TopicsDefault
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = ShutdownTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

// ConfigError is one invalid field of a Config, a CleanerConfig or a
// ServiceConfig; a validation joins one per invalid field (errors.As finds
// them). Its Field names the field ("Relay.Lease" when nested) and Msg says
// what is wrong; the same type is every herald package's ConfigError.
type ConfigError = config.Error

// Validate checks c (zero fields taking their defaults); each error is a
// *ConfigError naming the field. New calls it too.
func (c Config) Validate() error {
	return c.withDefaults().validate()
}

func (c Config) validate() error {
	var errs config.Errors
	if len(c.ID) > 128 {
		errs.Add("ID", "at most 128 characters, got %d", len(c.ID))
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		errs.Add("BatchSize", "must be 1..10000, got %d", c.BatchSize)
	}
	if c.Lease < time.Second {
		errs.Add("Lease", "must be at least 1s, got %v", c.Lease)
	}
	if c.PollInterval < time.Millisecond {
		errs.Add("PollInterval", "must be at least 1ms, got %v", c.PollInterval)
	}
	if c.MaxAttempts < 1 {
		errs.Add("MaxAttempts", "must be at least 1, got %d", c.MaxAttempts)
	}
	if c.BackoffBase <= 0 {
		errs.Add("BackoffBase", "must be positive, got %v", c.BackoffBase)
	}
	if c.BackoffCap < c.BackoffBase {
		errs.Add("BackoffCap", "must be at least BackoffBase (%v), got %v", c.BackoffBase, c.BackoffCap)
	}
	if c.OrderPolicy != store.OrderHold && c.OrderPolicy != store.OrderSkipQuarantined {
		errs.Add("OrderPolicy", "want %q or %q, got %q", store.OrderHold, store.OrderSkipQuarantined, c.OrderPolicy)
	}
	for typ, topic := range c.Topics {
		if typ == "" || strings.TrimSpace(topic) == "" {
			errs.Add("Topics", "%q=%q: aggregate type and topic must not be empty", typ, topic)
		} else if err := kafka.ValidateTopicName(topic); err != nil {
			errs.Add("Topics", "%s=%s: %v", typ, topic, err)
		}
	}
	if c.DefaultTopic != "" {
		if err := kafka.ValidateTopicName(c.DefaultTopic); err != nil {
			errs.Add("DefaultTopic", "%v", err)
		}
	}
	if c.ShutdownTimeout < 0 {
		errs.Add("ShutdownTimeout", "must not be negative, got %v", c.ShutdownTimeout)
	}
	errs.Nest("Records", c.Records.Validate())
	return errs.Err()
}

// encoder returns the encoder of the relay's records: its routes and
// formats (validated).
func (c Config) encoder() (*record.Encoder, error) {
	return record.NewEncoder(record.Config{Topics: c.Topics, DefaultTopic: c.DefaultTopic, Formats: c.Records})
}
