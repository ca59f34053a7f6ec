package wal

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store/postgres"
)

// Defaults of Config's fields.
const (
	PublicationDefault          = "herald_outbox"
	StatusIntervalDefault       = 10 * time.Second
	HeartbeatPeriodDefault      = time.Second
	TimeoutDefault              = 10 * time.Second
	ReconnectBackoffBaseDefault = 250 * time.Millisecond
	ReconnectBackoffCapDefault  = 5 * time.Second
	LagIntervalDefault          = time.Second
	ChunkEventsDefault          = 500
)

// slotPrefix starts every slot name herald derives (SlotName).
const slotPrefix = "herald_"

// Config shapes a Reader and the slot functions. URL is required; zero
// fields take their defaults.
type Config struct {
	// URL is herald's PostgreSQL URL (postgres://...), naming the outbox's
	// database: only inserts into that database's outbox_events are read.
	// The replication connection is this URL's, with replication=database.
	// Required.
	URL string
	// ConnOptions are the connection settings kept out of the URL (the
	// password). Defaults to none.
	ConnOptions postgres.ConnOptions
	// Slot is the logical replication slot the reader streams from: one
	// per outbox database, shared by the relays that lead in turn (the
	// stream lease decides who reads it). Slot names are unique in the
	// whole server. Defaults to SlotName of the URL's database
	// ("herald_<database>").
	Slot string
	// Publication is the publication that limits the slot to
	// outbox_events' inserts. Defaults to "herald_outbox".
	Publication string
	// Logger receives the reader's logs (reconnections, a slot taken over).
	// Defaults to slog.Default().
	Logger *slog.Logger
	// StatusInterval is how often, at most, the reader goes without telling
	// the server where it stands (a standby status update: the position
	// received, and the checkpoint confirmed as flushed). It must stay well
	// under the server's wal_sender_timeout (60s by default), which ends a
	// connection that stays silent longer. Defaults to 10s.
	StatusInterval time.Duration
	// HeartbeatPeriod is how often, at most, a Reader whose position moved
	// without outbox inserts (other tables, the server's keepalives) hands
	// out a heartbeat Tx; an idle reader asks the server for its position
	// this often. Defaults to 1s.
	HeartbeatPeriod time.Duration
	// Timeout bounds each exchange with the server outside the stream:
	// connecting, starting the stream, the queries on the slot. Defaults
	// to 10s.
	Timeout time.Duration
	// ReconnectBackoffBase is the wait before the first reconnection after
	// a lost connection; it doubles per failed attempt. Defaults to 250ms.
	ReconnectBackoffBase time.Duration
	// ReconnectBackoffCap is the longest wait between reconnections.
	// Defaults to 5s.
	ReconnectBackoffCap time.Duration
	// LagInterval is how often the reader reads the server's WAL position
	// for Lag. Defaults to 1s.
	LagInterval time.Duration
	// ChunkEvents is the most events of one transaction the reader holds:
	// a larger transaction comes in chunks of this many (Tx without a
	// Position) before its end. pgoutput sends a transaction only once it
	// committed, so every chunk is of a committed transaction
	// (docs/design.md, section 9.7). Defaults to 500.
	ChunkEvents int
}

// ConfigError is one invalid field of a Config (the same type as every
// herald package's ConfigError).
type ConfigError = config.Error

// SlotName is the slot herald uses for the outbox in database: "herald_"
// and the database's name, lower case, with every character a slot name
// cannot hold (anything but a-z, 0-9 and _) replaced by _, cut to 63
// bytes.
func SlotName(database string) string {
	var b strings.Builder
	b.WriteString(slotPrefix)
	for _, r := range strings.ToLower(database) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// DefaultSlot is the slot a Config without Slot uses for the outbox of
// the database dsn names (SlotName of it; "" when it names none).
func DefaultSlot(dsn string) string {
	if db := databaseOf(dsn); db != "" {
		return SlotName(db)
	}
	return ""
}

// validSlotName reports whether the server takes name as a slot's.
func validSlotName(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// databaseOf is the database named by a PostgreSQL URL.
func databaseOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Path != "" {
		return strings.TrimPrefix(u.Path, "/")
	}
	if cfg, err := postgres.ParseURL(dsn); err == nil {
		return cfg.Database
	}
	return ""
}

func (c Config) withDefaults() Config {
	if c.Slot == "" {
		c.Slot = DefaultSlot(c.URL)
	}
	if c.Publication == "" {
		c.Publication = PublicationDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = StatusIntervalDefault
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
// *ConfigError naming the field.
func (c Config) Validate() error {
	var errs config.Errors
	switch {
	case c.URL == "":
		errs.Add("URL", "is required")
	case !postgres.IsURL(c.URL):
		errs.Add("URL", "is not a PostgreSQL URL (postgres://user@host:5432/database)")
	default:
		if _, err := c.ConnOptions.Config(c.URL); err != nil {
			errs.Add("URL", "%v", err) // never echoes the password
		} else if databaseOf(c.URL) == "" {
			errs.Add("URL", "names no database: the outbox's database is where the reader looks for outbox_events")
		}
	}
	d := c.withDefaults()
	if c.Slot != "" && !validSlotName(c.Slot) {
		errs.Add("Slot", "%q is not a slot name: lower-case letters, digits and _, at most 63", c.Slot)
	}
	if strings.ContainsAny(d.Publication, `"'`) || len(d.Publication) > 63 {
		errs.Add("Publication", "%q is not a publication name", c.Publication)
	}
	positive := func(field string, v time.Duration) {
		if v < 0 {
			errs.Add(field, "must not be negative, got %v", v)
		}
	}
	positive("StatusInterval", c.StatusInterval)
	positive("HeartbeatPeriod", c.HeartbeatPeriod)
	positive("Timeout", c.Timeout)
	positive("ReconnectBackoffBase", c.ReconnectBackoffBase)
	positive("ReconnectBackoffCap", c.ReconnectBackoffCap)
	positive("LagInterval", c.LagInterval)
	if c.ChunkEvents < 0 {
		errs.Add("ChunkEvents", "must not be negative, got %d", c.ChunkEvents)
	}
	if c.ReconnectBackoffCap > 0 && c.ReconnectBackoffBase >= 0 && d.ReconnectBackoffCap < d.ReconnectBackoffBase {
		errs.Add("ReconnectBackoffCap", "must be at least ReconnectBackoffBase (%v), got %v", d.ReconnectBackoffBase, d.ReconnectBackoffCap)
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("wal reader config: %w", err)
	}
	return nil
}
