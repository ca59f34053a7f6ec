package wal

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/postgres"
)

// Defaults of Config's fields (changestream's for the embedded ones).
const (
	PublicationDefault    = "herald_outbox"
	StatusIntervalDefault = 10 * time.Second
)

// slotPrefix starts every slot name herald derives (SlotName).
const slotPrefix = "herald_"

// Config shapes a Reader, a Source and the slot functions. URL is
// required; zero fields take their defaults.
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
	// StatusInterval is how often, at most, the reader goes without telling
	// the server where it stands (a standby status update: the position
	// received, and the checkpoint confirmed as flushed). It must stay well
	// under the server's wal_sender_timeout (60s by default), which ends a
	// connection that stays silent longer. Defaults to 10s.
	StatusInterval time.Duration
	// Config holds the settings every change-stream reader takes.
	changestream.Config
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
	if c.StatusInterval == 0 {
		c.StatusInterval = StatusIntervalDefault
	}
	c.Config = changestream.WithDefaults(c.Config)
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
	if c.StatusInterval < 0 {
		errs.Add("StatusInterval", "must not be negative, got %v", c.StatusInterval)
	}
	errs = append(errs, config.Leaves(c.Config.Validate())...)
	if err := errs.Err(); err != nil {
		return fmt.Errorf("wal reader config: %w", err)
	}
	return nil
}
