package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/internal/redact"
)

// Headers of a dead-letter record, added to the original record's headers.
// Its key and value are the original's, byte for byte.
const (
	// HeaderDLQErrorClass says why the record was dead-lettered: malformed,
	// missing_id, unknown_type, unsupported_version or handler.
	HeaderDLQErrorClass = "herald-dlq-error-class"
	// HeaderDLQError is the error text, scrubbed of secrets, at most
	// DLQErrorMaxLen characters.
	HeaderDLQError = "herald-dlq-error"
	// HeaderDLQTopic, HeaderDLQPartition and HeaderDLQOffset locate the
	// original record.
	HeaderDLQTopic     = "herald-dlq-topic"
	HeaderDLQPartition = "herald-dlq-partition"
	HeaderDLQOffset    = "herald-dlq-offset"
	// HeaderDLQConsumer names the consumer that gave up on the record.
	HeaderDLQConsumer = "herald-dlq-consumer"
	// HeaderDLQAttempts is how many times the handler ran (0 when the
	// record could not be decoded).
	HeaderDLQAttempts = "herald-dlq-attempts"
	// HeaderDLQFailedAt is when the consumer gave up (RFC 3339, UTC).
	HeaderDLQFailedAt = "herald-dlq-failed-at"
)

// DLQErrorMaxLen bounds HeaderDLQError in characters, like the outbox's
// last_error.
const DLQErrorMaxLen = 1000

// DLQTopicName is the default dead-letter topic of consumer for topic:
// "<topic>.dlq.<consumer>". One per consumer, so one consumer's poison never
// lands in another's replay.
func DLQTopicName(topic, consumer string) string {
	return topic + ".dlq." + consumer
}

// DeadLetter is a record a consumer gives up on.
type DeadLetter struct {
	// Record is the original record.
	Record *kgo.Record
	// Class is the error class (HeaderDLQErrorClass).
	Class string
	// Err is why; its text is scrubbed and truncated.
	Err error
	// Consumer names the consumer.
	Consumer string
	// Attempts is how many times the handler ran.
	Attempts int
	// FailedAt is when the consumer gave up.
	FailedAt time.Time
}

// DLQWriterConfig shapes a DLQWriter. Brokers is required; zero values
// elsewhere mean defaults.
type DLQWriterConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// Partitions of a dead-letter topic the writer creates. Defaults to 1.
	Partitions int32
	// ReplicationFactor of a dead-letter topic the writer creates. Defaults
	// to -1: the brokers' default.replication.factor.
	ReplicationFactor int16
	// ClientOptions are added to the producer's options (TLS, SASL).
	// Defaults to none.
	ClientOptions []kgo.Opt
}

func (c DLQWriterConfig) withDefaults() DLQWriterConfig {
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	return c
}

func (c DLQWriterConfig) validate() error {
	var errs config.Errors
	if len(c.Brokers) == 0 {
		errs.Add("Brokers", "at least one broker is required")
	}
	if c.Partitions < 0 {
		errs.Add("Partitions", "must not be negative, got %d", c.Partitions)
	}
	if c.ReplicationFactor < -1 {
		errs.Add("ReplicationFactor", "must be positive, or -1 for the brokers' default, got %d", c.ReplicationFactor)
	}
	return errs.Err()
}

// DLQWriter produces dead letters with acks=all and the idempotent producer,
// creating dead-letter topics as needed (brokers may refuse to create topics
// on first use).
type DLQWriter struct {
	cfg DLQWriterConfig
	cl  *kgo.Client
	adm *kadm.Client

	mu      sync.Mutex
	ensured map[string]bool
}

// NewDLQWriter returns a DLQWriter; Close releases it.
func NewDLQWriter(cfg DLQWriterConfig) (*DLQWriter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dlq writer config: %w", err)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotent writes are franz-go's default
	}, cfg.ClientOptions...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dlq writer: %w", err)
	}
	return &DLQWriter{cfg: cfg, cl: cl, adm: kadm.NewClient(cl), ensured: map[string]bool{}}, nil
}

// Close releases the writer's connections.
func (w *DLQWriter) Close() { w.cl.Close() }

// EnsureTopic creates topic unless it exists.
func (w *DLQWriter) EnsureTopic(ctx context.Context, topic string) error {
	w.mu.Lock()
	done := w.ensured[topic]
	w.mu.Unlock()
	if done {
		return nil
	}
	if _, err := CreateTopicIfMissing(ctx, w.adm, topic, w.cfg.Partitions, w.cfg.ReplicationFactor, nil); err != nil {
		return err
	}
	w.mu.Lock()
	w.ensured[topic] = true
	w.mu.Unlock()
	return nil
}

// Write produces dl to topic and returns once every in-sync replica has it.
// A topic that disappeared is created again.
func (w *DLQWriter) Write(ctx context.Context, topic string, dl DeadLetter) error {
	if err := w.EnsureTopic(ctx, topic); err != nil {
		return err
	}
	rec := deadLetterRecord(topic, dl)
	err := w.cl.ProduceSync(ctx, rec).FirstErr()
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		w.mu.Lock()
		delete(w.ensured, topic)
		w.mu.Unlock()
		if err := w.EnsureTopic(ctx, topic); err != nil {
			return err
		}
		err = w.cl.ProduceSync(ctx, deadLetterRecord(topic, dl)).FirstErr()
	}
	if err != nil {
		return fmt.Errorf("produce dead letter to %s: %w", topic, err)
	}
	return nil
}

// deadLetterRecord copies the original record and adds the DLQ headers,
// replacing any a previous dead-lettering left.
func deadLetterRecord(topic string, dl DeadLetter) *kgo.Record {
	orig := dl.Record
	rec := &kgo.Record{Topic: topic, Key: orig.Key, Value: orig.Value}
	for _, h := range orig.Headers {
		if !strings.HasPrefix(h.Key, "herald-dlq-") {
			rec.Headers = append(rec.Headers, h)
		}
	}
	msg := ""
	if dl.Err != nil {
		msg = ScrubError(dl.Err.Error())
	}
	failedAt := dl.FailedAt
	if failedAt.IsZero() {
		failedAt = time.Now()
	}
	add := func(k, v string) { rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderDLQErrorClass, dl.Class)
	add(HeaderDLQError, msg)
	add(HeaderDLQTopic, orig.Topic)
	add(HeaderDLQPartition, strconv.FormatInt(int64(orig.Partition), 10))
	add(HeaderDLQOffset, strconv.FormatInt(orig.Offset, 10))
	add(HeaderDLQConsumer, dl.Consumer)
	add(HeaderDLQAttempts, strconv.Itoa(dl.Attempts))
	add(HeaderDLQFailedAt, failedAt.UTC().Format(time.RFC3339Nano))
	return rec
}

// ScrubError is the text of an error as herald records it outside the
// process (a dead letter's HeaderDLQError, a warehouse call's last_error):
// credentials removed by redact.Secrets (DSN passwords, URL user info,
// bearer tokens, key=value secrets), then cut to DLQErrorMaxLen characters
// by redact.Truncate, like the outbox's last_error.
func ScrubError(msg string) string {
	return redact.Truncate(redact.Secrets(msg), DLQErrorMaxLen)
}
