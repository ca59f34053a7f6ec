package binlog

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/internal/config"
)

// Defaults of Config's fields.
const (
	HeartbeatPeriodDefault      = time.Second
	ReadTimeoutDefault          = 10 * time.Second
	TimeoutDefault              = 10 * time.Second
	ReconnectBackoffBaseDefault = 250 * time.Millisecond
	ReconnectBackoffCapDefault  = 5 * time.Second
	LagIntervalDefault          = time.Second
	ChunkEventsDefault          = 500
)

// ServerIDMin is the smallest ServerID the default draws: replica ids of
// real servers are small numbers by convention, so a random id at or above
// 2^31 does not collide with them (two replicas with one id make the server
// drop the older connection).
const ServerIDMin = 1 << 31

// Config shapes a Reader. DSN is required; zero fields take their defaults.
type Config struct {
	// DSN is herald's MySQL DSN (go-sql-driver format): host and port (or
	// unix socket), user, password and the outbox's database. Only inserts
	// into that database's outbox_events are read. Required.
	DSN string
	// ServerID is the replica id the reader registers with; it must differ
	// from every other replica's. Defaults to a random value at or above
	// ServerIDMin.
	ServerID uint32
	// Logger receives the reader's logs (reconnections, skipped XA
	// transactions). Defaults to slog.Default().
	Logger *slog.Logger
	// HeartbeatPeriod is how long the server's stream stays silent before it
	// sends a heartbeat. It is also how often, at most, a Reader whose
	// position moved without outbox inserts (other tables, an idle server)
	// hands out a heartbeat Tx. Defaults to 1s.
	HeartbeatPeriod time.Duration
	// ReadTimeout is how long the stream may stay silent (no event, no
	// heartbeat) before the connection counts as lost and is replaced. It
	// must exceed HeartbeatPeriod. Defaults to 10s, or 3 × HeartbeatPeriod
	// when that is longer.
	ReadTimeout time.Duration
	// Timeout bounds each exchange with the server outside the stream:
	// connecting, starting the stream from a position, the queries behind
	// Lag. Defaults to 10s.
	Timeout time.Duration
	// ReconnectBackoffBase is the wait before the first reconnection after
	// a lost connection; it doubles per failed attempt. Defaults to 250ms.
	ReconnectBackoffBase time.Duration
	// ReconnectBackoffCap is the longest wait between reconnections.
	// Defaults to 5s.
	ReconnectBackoffCap time.Duration
	// LagInterval is how often the reader reads the server's binlog head
	// for Lag. Defaults to 1s.
	LagInterval time.Duration
	// ChunkEvents is the most events of one transaction the reader holds:
	// a larger transaction that the binlog says committed whole comes in
	// chunks of this many (Tx without a Position) before its end
	// (docs/design.md, section 9.7). Defaults to 500.
	ChunkEvents int
}

// ConfigError is one invalid field of a Config (the same type as every
// herald package's ConfigError).
type ConfigError = config.Error

func (c Config) withDefaults() Config {
	if c.ServerID == 0 {
		c.ServerID = ServerIDMin + rand.Uint32N(1<<31-1) // never 0, never past 2^32-1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HeartbeatPeriod == 0 {
		c.HeartbeatPeriod = HeartbeatPeriodDefault
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = max(ReadTimeoutDefault, 3*c.HeartbeatPeriod)
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
// *ConfigError naming the field. Open calls it too.
func (c Config) Validate() error {
	var errs config.Errors
	if c.DSN == "" {
		errs.Add("DSN", "is required")
	} else if dsn, err := driver.ParseDSN(c.DSN); err != nil {
		errs.Add("DSN", "cannot be parsed: %v", err) // the driver's message never echoes the password
	} else if dsn.DBName == "" {
		errs.Add("DSN", "names no database: the outbox's database is where the reader looks for outbox_events")
	}
	d := c.withDefaults()
	positive := func(field string, v time.Duration) {
		if v < 0 {
			errs.Add(field, "must not be negative, got %v", v)
		}
	}
	positive("HeartbeatPeriod", c.HeartbeatPeriod)
	positive("ReadTimeout", c.ReadTimeout)
	positive("Timeout", c.Timeout)
	positive("ReconnectBackoffBase", c.ReconnectBackoffBase)
	positive("ReconnectBackoffCap", c.ReconnectBackoffCap)
	positive("LagInterval", c.LagInterval)
	if c.ChunkEvents < 0 {
		errs.Add("ChunkEvents", "must not be negative, got %d", c.ChunkEvents)
	}
	if c.HeartbeatPeriod > 0 && c.HeartbeatPeriod < time.Millisecond {
		errs.Add("HeartbeatPeriod", "must be at least 1ms (the server's resolution), got %v", c.HeartbeatPeriod)
	}
	if c.ReadTimeout > 0 && c.HeartbeatPeriod >= 0 && d.ReadTimeout <= d.HeartbeatPeriod {
		errs.Add("ReadTimeout", "must exceed HeartbeatPeriod (%v), got %v: an idle stream would count as lost", d.HeartbeatPeriod, d.ReadTimeout)
	}
	if c.ReconnectBackoffCap > 0 && c.ReconnectBackoffBase >= 0 && d.ReconnectBackoffCap < d.ReconnectBackoffBase {
		errs.Add("ReconnectBackoffCap", "must be at least ReconnectBackoffBase (%v), got %v", d.ReconnectBackoffBase, d.ReconnectBackoffCap)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("binlog reader config: %w", err)
	}
	return nil
}
