package binlog

import (
	"fmt"
	"math/rand/v2"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store/changestream"
)

// ReadTimeoutDefault is the least ReadTimeout defaults to.
const ReadTimeoutDefault = 10 * time.Second

// ServerIDMin is the smallest ServerID the default draws: replica ids of
// real servers are small numbers by convention, so a random id at or above
// 2^31 does not collide with them (two replicas with one id make the server
// drop the older connection).
const ServerIDMin = 1 << 31

// Config shapes a Reader and a Source. DSN is required; zero fields take
// their defaults.
type Config struct {
	// DSN is herald's MySQL DSN (go-sql-driver format): host and port (or
	// unix socket), user, password and the outbox's database. Only inserts
	// into that database's outbox_events are read. The replication
	// connection is this DSN's; the queries go through the pool the caller
	// passes, on the same database. Required.
	DSN string
	// ServerID is the replica id the reader registers with; it must differ
	// from every other replica's. Defaults to a random value at or above
	// ServerIDMin.
	ServerID uint32
	// ReadTimeout is how long the stream may stay silent (no event, no
	// heartbeat) before the connection counts as lost and is replaced. It
	// must exceed HeartbeatPeriod. Defaults to 10s, or 3 × HeartbeatPeriod
	// when that is longer.
	ReadTimeout time.Duration
	// Config holds the settings every change-stream reader takes. Its
	// HeartbeatPeriod is also how long the server's stream stays silent
	// before it sends a heartbeat, at least 1ms.
	changestream.Config
}

// ConfigError is one invalid field of a Config (the same type as every
// herald package's ConfigError).
type ConfigError = config.Error

func (c Config) withDefaults() Config {
	if c.ServerID == 0 {
		c.ServerID = ServerIDMin + rand.Uint32N(1<<31-1) // never 0, never past 2^32-1
	}
	c.Config = changestream.WithDefaults(c.Config)
	if c.ReadTimeout == 0 {
		c.ReadTimeout = max(ReadTimeoutDefault, 3*c.HeartbeatPeriod)
	}
	return c
}

// Validate checks c (zero fields taking their defaults); each error is a
// *ConfigError naming the field. NewSource and Open call it too.
func (c Config) Validate() error {
	var errs config.Errors
	if c.DSN == "" {
		errs.Add("DSN", "is required")
	} else if dsn, err := driver.ParseDSN(c.DSN); err != nil {
		errs.Add("DSN", "cannot be parsed: %v", err) // the driver's message never echoes the password
	} else if dsn.DBName == "" {
		errs.Add("DSN", "names no database: the outbox's database is where the reader looks for outbox_events")
	}
	errs = append(errs, config.Leaves(c.Config.Validate())...)
	d := c.withDefaults()
	if c.ReadTimeout < 0 {
		errs.Add("ReadTimeout", "must not be negative, got %v", c.ReadTimeout)
	}
	if c.HeartbeatPeriod > 0 && c.HeartbeatPeriod < time.Millisecond {
		errs.Add("HeartbeatPeriod", "must be at least 1ms (the server's resolution), got %v", c.HeartbeatPeriod)
	}
	if c.ReadTimeout > 0 && c.HeartbeatPeriod >= 0 && d.ReadTimeout <= d.HeartbeatPeriod {
		errs.Add("ReadTimeout", "must exceed HeartbeatPeriod (%v), got %v: an idle stream would count as lost", d.HeartbeatPeriod, d.ReadTimeout)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("binlog reader config: %w", err)
	}
	return nil
}
