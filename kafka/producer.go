package kafka

import (
	"context"
	"fmt"
	"log/slog"
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
	// Logger receives the client's warnings and errors. Defaults to none.
	Logger *slog.Logger
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
	if cfg.MaxRecordBytes == 0 {
		cfg.MaxRecordBytes = MaxRecordBytesDefault
	}
	if err := ValidateMaxRecordBytes(cfg.MaxRecordBytes); err != nil {
		return nil, fmt.Errorf("kafka producer: MaxRecordBytes: %w", err)
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
		// franz-go's default (1,000,012) is below what the outbox writer
		// accepts. Its count is Kafka's plus a prefix of at least one byte,
		// so no batch it sends exceeds MaxRecordBytes by Kafka's count.
		kgo.ProducerBatchMaxBytes(int32(cfg.MaxRecordBytes + 1)),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		kgo.ProduceRequestTimeout(min(cfg.DeliveryTimeout, 10*time.Second)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(slogLogger{cfg.Logger}))
	}
	cl, err := kgo.NewClient(opts...)
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

// slogLogger passes franz-go's warnings and errors to slog.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lvl := slog.LevelWarn
	if level == kgo.LogLevelError {
		lvl = slog.LevelError
	}
	s.l.Log(context.Background(), lvl, "kafka: "+msg, keyvals...)
}
