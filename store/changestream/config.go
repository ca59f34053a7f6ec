package changestream

import (
	"log/slog"
	"time"

	"github.com/herald-outbox/herald/internal/config"
)

// Defaults of Config's fields.
const (
	HeartbeatPeriodDefault      = time.Second
	TimeoutDefault              = 10 * time.Second
	ReconnectBackoffBaseDefault = 250 * time.Millisecond
	ReconnectBackoffCapDefault  = 5 * time.Second
	LagIntervalDefault          = time.Second
	ChunkEventsDefault          = 500
)

// Config holds the settings every reader takes; binlog.Config and
// wal.Config embed it beside their database's own. Zero fields take their
// defaults.
type Config struct {
	// Logger receives the reader's logs (reconnections, a lag that cannot
	// be read, what the server's stream holds that the reader skips).
	// Defaults to slog.Default().
	Logger *slog.Logger
	// HeartbeatPeriod is how often, at most, a Reader whose position moved
	// without outbox inserts (other tables, an idle server) hands out a
	// heartbeat Tx, and how long an idle stream waits for the server's
	// word: the binlog server's heartbeat period, the interval at which an
	// idle WAL reader asks the server for its position. Defaults to 1s.
	HeartbeatPeriod time.Duration
	// Timeout bounds each exchange with the server outside the stream:
	// connecting, starting the stream from a position, the queries behind
	// Lag and on the server's replication state. Defaults to 10s.
	Timeout time.Duration
	// ReconnectBackoffBase is the wait before the second attempt to
	// reconnect after a lost connection (the first is at once); it doubles
	// per failed attempt. Defaults to 250ms.
	ReconnectBackoffBase time.Duration
	// ReconnectBackoffCap is the longest wait between reconnections.
	// Defaults to 5s, or ReconnectBackoffBase when that is longer.
	ReconnectBackoffCap time.Duration
	// LagInterval is how often the reader reads the server's head (the
	// binlog's files, the WAL's write position) for Lag. Defaults to 1s.
	LagInterval time.Duration
	// ChunkEvents is the most events of one transaction the reader holds:
	// a larger transaction that the stream says committed comes in chunks
	// of this many (Tx without a Position) before its end (docs/design.md,
	// "Transactions of any size"). Defaults to 500.
	ChunkEvents int
}

// WithDefaults returns c with its zero fields set to their defaults. It is
// a function rather than a method so that it is not promoted to the
// Configs that embed Config, whose own defaults come on top.
func WithDefaults(c Config) Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HeartbeatPeriod == 0 {
		c.HeartbeatPeriod = HeartbeatPeriodDefault
	}
	if c.Timeout == 0 {
		c.Timeout = TimeoutDefault
	}
	if c.ReconnectBackoffBase == 0 {
		c.ReconnectBackoffBase = ReconnectBackoffBaseDefault
	}
	if c.ReconnectBackoffCap == 0 {
		c.ReconnectBackoffCap = max(ReconnectBackoffCapDefault, c.ReconnectBackoffBase)
	}
	if c.LagInterval == 0 {
		c.LagInterval = LagIntervalDefault
	}
	if c.ChunkEvents == 0 {
		c.ChunkEvents = ChunkEventsDefault
	}
	return c
}

// Validate checks c (zero fields taking their defaults); each error is a
// *config.Error naming the field as the embedding Config promotes it.
func (c Config) Validate() error {
	var errs config.Errors
	d := WithDefaults(c)
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatPeriod", c.HeartbeatPeriod},
		{"Timeout", c.Timeout},
		{"ReconnectBackoffBase", c.ReconnectBackoffBase},
		{"ReconnectBackoffCap", c.ReconnectBackoffCap},
		{"LagInterval", c.LagInterval},
	} {
		if f.v < 0 {
			errs.Add(f.name, "must not be negative, got %v", f.v)
		}
	}
	if c.ChunkEvents < 0 {
		errs.Add("ChunkEvents", "must not be negative, got %d", c.ChunkEvents)
	}
	if c.ReconnectBackoffCap > 0 && c.ReconnectBackoffBase >= 0 && d.ReconnectBackoffCap < d.ReconnectBackoffBase {
		errs.Add("ReconnectBackoffCap", "must be at least ReconnectBackoffBase (%v), got %v", d.ReconnectBackoffBase, d.ReconnectBackoffCap)
	}
	return errs.Err()
}
