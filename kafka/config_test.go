package kafka

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/config"
)

// fields lists the fields an error's *ConfigErrors name.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, leaf := range config.Leaves(err) {
		var ce *ConfigError
		if !errors.As(leaf, &ce) {
			t.Fatalf("%v is not a *ConfigError", leaf)
		}
		out = append(out, ce.Field)
	}
	return out
}

// TestConfigsReportEveryFieldAtOnce: each config of the package names all
// its invalid fields in one error, before any connection is made.
func TestConfigsReportEveryFieldAtOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"producer", func() error {
			_, err := NewProducer(ProducerConfig{Compression: "brotli", DeliveryTimeout: -time.Second})
			return err
		}(), []string{"Brokers", "Compression", "DeliveryTimeout"}},
		{"consumer", func() error {
			_, err := NewConsumer(ConsumerConfig{MaxPollRecords: -1, CommitInterval: -time.Second})
			return err
		}(), []string{"Brokers", "Group", "Topics", "Process", "MaxPollRecords", "CommitInterval"}},
		{"dlq writer", func() error {
			_, err := NewDLQWriter(DLQWriterConfig{Partitions: -1, ReplicationFactor: -2})
			return err
		}(), []string{"Brokers", "Partitions", "ReplicationFactor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fields(t, tt.err); !slices.Equal(got, tt.want) {
				t.Errorf("fields %q, want %q (error: %v)", got, tt.want, tt.err)
			}
		})
	}
}

func TestProducerConfigDefaults(t *testing.T) {
	c := ProducerConfig{Brokers: []string{"b:9092"}}.withDefaults()
	if c.ClientID != "herald" || c.Compression != CompressionDefault || c.Linger != LingerDefault ||
		c.DeliveryTimeout != DeliveryTimeoutDefault {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	// A negative linger is "none" (`herald relay --linger 0`), not the
	// default.
	if got := (ProducerConfig{Linger: -1}).withDefaults().Linger; got != -1 {
		t.Errorf("Linger -1 became %v", got)
	}
}
