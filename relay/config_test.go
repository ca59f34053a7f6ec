package relay

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/metrics"
)

// fields lists the fields an error's *ConfigErrors name, failing t on any
// other error.
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

// TestConfigsReportEveryFieldAtOnce: each config names all its invalid
// fields in one error; a ServiceConfig names its nested fields with their
// path.
func TestConfigsReportEveryFieldAtOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"valid relay config", Config{}.Validate(), nil},
		{"relay", Config{BatchSize: -1, Lease: time.Millisecond, MaxAttempts: -1, OrderPolicy: "fifo"}.Validate(),
			[]string{"BatchSize", "Lease", "MaxAttempts", "OrderPolicy"}},
		{"cleaner without retention", CleanerConfig{}.Validate(), []string{"Retention"}},
		{"cleaner", CleanerConfig{Retention: time.Hour, InboxRetention: time.Minute, BatchSize: 20000, Pause: -1, Interval: time.Millisecond}.Validate(),
			[]string{"InboxRetention", "BatchSize", "Pause", "Interval"}},
		{"valid service config: cleanup off, no HTTP", ServiceConfig{}.Validate(), nil},
		{"service", ServiceConfig{
			Relay:           Config{Lease: -time.Second, PollInterval: -1},
			Cleaner:         CleanerConfig{Retention: time.Hour, Interval: time.Millisecond},
			BacklogInterval: -time.Second,
			MetricsAddr:     "nowhere",
		}.Validate(), []string{"Relay.Lease", "Relay.PollInterval", "Cleaner.Interval", "BacklogInterval", "MetricsAddr"}},
		{"negative retention is not 'off'", ServiceConfig{Cleaner: CleanerConfig{Retention: -time.Hour}}.Validate(),
			[]string{"Cleaner.Retention"}},
		{"inbox retention with cleanup off", ServiceConfig{Cleaner: CleanerConfig{InboxRetention: time.Hour}}.Validate(),
			[]string{"Cleaner.InboxRetention"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fields(t, tt.err); !slices.Equal(got, tt.want) {
				t.Errorf("fields %q, want %q (error: %v)", got, tt.want, tt.err)
			}
		})
	}
}

// TestNewServiceLeavesARefusedRegistryAlone: a config NewService refuses
// registers nothing on the caller's registry, so the caller can fix the
// config and try again with the same registry.
func TestNewServiceLeavesARefusedRegistryAlone(t *testing.T) {
	reg := metrics.NewRegistry()
	before, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewService(ServiceConfig{Relay: Config{BatchSize: -1}, Registry: reg}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Relay.BatchSize") {
		t.Fatalf("NewService = %v, want an error naming Relay.BatchSize", err)
	}
	after, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the registry went from %d to %d metric families", len(before), len(after))
	}
}
