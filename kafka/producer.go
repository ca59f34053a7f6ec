package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer defaults.
const (
	// LingerDefault is ProducerConfig.Linger's default.
	LingerDefault = 5 * time.Millisecond
	// CompressionDefault is ProducerConfig.Compression's default.
	CompressionDefault = "lz4"
)

// ProducerConfig shapes the producer the relay publishes with.
type ProducerConfig struct {
	// Brokers are the seed brokers. Required.
	Brokers []string
	// ClientID names the client in broker logs. Defaults to "herald".
	ClientID string
	// Compression is none, gzip, snappy, lz4 or zstd. Defaults to lz4.
	Compression string
	// Linger is how long a partition's batch waits for more records.
	// Defaults to 5ms.
	Linger time.Duration
	// DeliveryTimeout bounds how long a record may take to be acknowledged,
	// retries included. Defaults to 30s.
	DeliveryTimeout time.Duration
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
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("kafka producer: no brokers")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "herald"
	}
	if cfg.Compression == "" {
		cfg.Compression = CompressionDefault
	}
	if cfg.Linger == 0 {
		cfg.Linger = LingerDefault
	}
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = 30 * time.Second
	}
	codec, err := ParseCompression(cfg.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(cfg.Linger),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		kgo.ProduceRequestTimeout(min(cfg.DeliveryTimeout, 10*time.Second)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
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
