package kafka

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSlogLoggerRepeats: franz-go's report of a refused connection, repeated
// at every attempt, reaches the log once; another message or another
// error still gets through.
func TestSlogLoggerRepeats(t *testing.T) {
	var out strings.Builder
	l := newSlogLogger(slog.New(slog.NewJSONHandler(&out, nil)))
	for range 5 {
		l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "seed_0", "err", "SASL_AUTHENTICATION_FAILED")
	}
	l.Log(kgo.LogLevelError, "unable to initialize sasl", "broker", "seed_0", "err", "ILLEGAL_SASL_STATE")
	l.Log(kgo.LogLevelWarn, "metadata update failed", "err", "SASL_AUTHENTICATION_FAILED")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines logged, want 3 (one per distinct message and error):\n%s", len(lines), out.String())
	}
	if !strings.Contains(lines[0], `"level":"ERROR"`) || !strings.Contains(lines[2], `"level":"WARN"`) {
		t.Errorf("levels not kept:\n%s", out.String())
	}
}
