package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
)

// Producer defaults.
const (
	// LingerDefault is ProducerConfig.Linger's default.
	LingerDefault = 5 * time.Millisecond
	// CompressionDefault is ProducerConfig.Compression's default.
	CompressionDefault = "lz4"
	// DeliveryTimeoutDefault is ProducerConfig.DeliveryTimeout's default.
	DeliveryTimeoutDefault = 30 * time.Second
)

// ProducerConfig shapes the producer the relay publishes with. Brokers is
// required; zero values elsewhere mean defaults.
type ProducerConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// ClientID names the client in broker logs. Defaults to "herald".
	ClientID string
	// Compression is none, gzip, snappy, lz4 or zstd. Defaults to lz4.
	Compression string
	// Linger is how long a partition's batch waits for more records; a
	// negative value sends each batch at once. Defaults to 5ms.
	Linger time.Duration
	// MaxRecordBytes is the largest record batch the producer sends,
	// uncompressed, counted as Kafka counts a topic's max.message.bytes (see
	// RecordBatchBytes), so a topic whose max.message.bytes is at least this
	// accepts every batch. A record larger than this fails with
	// kerr.MessageTooLarge before it is sent; so may one up to 3 bytes
	// smaller, since franz-go counts a batch with the 1 to 4 bytes of its
	// length prefix in the produce request. Defaults to
	// MaxRecordBytesDefault.
	MaxRecordBytes int
	// DeliveryTimeout bounds how long a record may take to be acknowledged,
	// retries included. Defaults to 30s.
	DeliveryTimeout time.Duration
	// RecordTimestamps says the records carry their own timestamps (an
	// event's time, which may be hours old). franz-go measures its delivery
	// timeout from a record's timestamp, so such a record would time out
	// before it was sent: the delivery timeout is then off, and the
	// caller bounds its wait for acknowledgements with its context (the
	// relay does, by its lease). Defaults to false.
	RecordTimestamps bool
	// Logger receives the client's warnings and errors. Defaults to none.
	Logger *slog.Logger
	// ClientOptions are added to the client's options: Security.Options
	// (TLS, SASL), a client id. Options that change acks, idempotence or
	// partitioning break the relay's guarantees. Defaults to none.
	ClientOptions []kgo.Opt
}

// NewProducer returns a franz-go client that writes with acks=all and the
// idempotent producer (so retries neither duplicate nor reorder records of
// a partition), partitioning by key with Kafka's murmur2 hash like the Java
// client.
func NewProducer(cfg ProducerConfig) (*kgo.Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("kafka producer config: %w", err)
	}
	codec, _ := ParseCompression(cfg.Compression) // validated
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(max(cfg.Linger, 0)),
		// franz-go's default (1,000,012) is below what the outbox writer
		// accepts. Its count is Kafka's plus a prefix of at least one byte,
		// so no batch it sends exceeds MaxRecordBytes by Kafka's count.
		kgo.ProducerBatchMaxBytes(int32(cfg.MaxRecordBytes + 1)),
		kgo.ProduceRequestTimeout(min(cfg.DeliveryTimeout, 10*time.Second)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}
	if !cfg.RecordTimestamps {
		opts = append(opts, kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout))
	}
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(newSlogLogger(cfg.Logger)))
	}
	cl, err := kgo.NewClient(append(opts, cfg.ClientOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return cl, nil
}

func (c ProducerConfig) withDefaults() ProducerConfig {
	if c.ClientID == "" {
		c.ClientID = "herald"
	}
	if c.Compression == "" {
		c.Compression = CompressionDefault
	}
	if c.Linger == 0 {
		c.Linger = LingerDefault
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DeliveryTimeoutDefault
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = MaxRecordBytesDefault
	}
	return c
}

func (c ProducerConfig) validate() error {
	var errs config.Errors
	if len(c.Brokers) == 0 {
		errs.Add("Brokers", "at least one broker is required")
	}
	if _, err := ParseCompression(c.Compression); err != nil {
		errs.Add("Compression", "%v", err)
	}
	if c.DeliveryTimeout < 0 {
		errs.Add("DeliveryTimeout", "must not be negative, got %v", c.DeliveryTimeout)
	}
	if err := ValidateMaxRecordBytes(c.MaxRecordBytes); err != nil {
		errs.Add("MaxRecordBytes", "%v", err)
	}
	return errs.Err()
}

// ParseCompression maps a codec name to franz-go's codec.
func ParseCompression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (want none, gzip, snappy, lz4 or zstd)", name)
}

// slogLogger passes franz-go's warnings and errors to slog. franz-go logs
// a failure at every connection attempt (a refused password: several a
// second), so a message repeated with the same error is passed on at most
// once per logRepeatInterval, with how often it happened meanwhile.
type slogLogger struct {
	l *slog.Logger

	mu   sync.Mutex
	seen map[string]*repeats
}

// logRepeatInterval is how often slogLogger passes on one repeated message.
const logRepeatInterval = time.Minute

type repeats struct {
	last       time.Time
	suppressed int
}

func newSlogLogger(l *slog.Logger) *slogLogger {
	return &slogLogger{l: l, seen: map[string]*repeats{}}
}

func (s *slogLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (s *slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	if level == kgo.LogLevelError {
		lvl = slog.LevelError
	}
	key := msg
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "err" {
			key += "\x00" + fmt.Sprint(keyvals[i+1])
		}
	}
	now := time.Now()
	s.mu.Lock()
	r := s.seen[key]
	if r != nil && now.Sub(r.last) < logRepeatInterval {
		r.suppressed++
		s.mu.Unlock()
		return
	}
	if len(s.seen) > 1000 { // bounded: forget old messages
		s.seen = map[string]*repeats{}
	}
	suppressed := 0
	if r != nil {
		suppressed = r.suppressed
	}
	s.seen[key] = &repeats{last: now}
	s.mu.Unlock()
	if suppressed > 0 {
		keyvals = append(keyvals, "repeated", suppressed)
	}
	s.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
