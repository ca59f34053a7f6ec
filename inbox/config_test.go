package inbox

import (
	"errors"
	"slices"
	"testing"

	"github.com/herald-outbox/herald/internal/config"
)

// TestConfigReportsEveryFieldAtOnce: an empty Config names every required
// field in one error, each a *ConfigError.
func TestConfigReportsEveryFieldAtOnce(t *testing.T) {
	err := Config{BatchSize: -1}.validate()
	var got []string
	for _, leaf := range config.Leaves(err) {
		var ce *ConfigError
		if !errors.As(leaf, &ce) {
			t.Fatalf("%v is not a *ConfigError", leaf)
		}
		got = append(got, ce.Field)
	}
	want := []string{"ConsumerName", "Brokers", "Topics", "DB", "Dialect", "Registry", "Handler", "BatchSize"}
	if !slices.Equal(got, want) {
		t.Errorf("fields %q, want %q", got, want)
	}
}
