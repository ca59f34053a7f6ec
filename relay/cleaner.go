package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
)

// Cleaner defaults.
const (
	CleanupBatchSizeDefault = 1000
	CleanupPauseDefault     = 100 * time.Millisecond
	CleanupIntervalDefault  = 10 * time.Minute
)

// CleanupStore is what the cleaner needs from the database.
type CleanupStore interface {
	Cleanup(ctx context.Context, req store.CleanupRequest) (store.CleanupReport, error)
}

// CleanerConfig shapes a Cleaner. Zero fields other than Retention take
// their defaults; Validate reports every invalid field at once.
type CleanerConfig struct {
	// Retention keeps published events this long (the replay window).
	// Required: there is no default.
	Retention time.Duration
	// InboxRetention keeps consumed_events rows this long; it must exceed
	// Retention. Zero leaves the inbox alone. Defaults to 0.
	InboxRetention time.Duration
	// BatchSize is the most rows one DELETE removes. Defaults to 1000.
	BatchSize int
	// Pause is the wait between batches. Defaults to 100ms.
	Pause time.Duration
	// Interval is the wait between passes. Defaults to 10m.
	Interval time.Duration
	// Logger receives the cleaner's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// Observer is told about each pass (a Service's metrics). Defaults to
	// none.
	Observer CleanupObserver
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.BatchSize == 0 {
		c.BatchSize = CleanupBatchSizeDefault
	}
	if c.Pause == 0 {
		c.Pause = CleanupPauseDefault
	}
	if c.Interval == 0 {
		c.Interval = CleanupIntervalDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c CleanerConfig) request() store.CleanupRequest {
	return store.CleanupRequest{Retention: c.Retention, InboxRetention: c.InboxRetention,
		BatchSize: c.BatchSize, Pause: c.Pause}
}

// Cleaner deletes published events past the retention, in the background
// of a relay. Several relays may run one: deletes are idempotent.
type Cleaner struct {
	cfg   CleanerConfig
	store CleanupStore
}

// Validate checks c (zero fields taking their defaults); each error is a
// *ConfigError naming the field. NewCleaner calls it too.
func (c CleanerConfig) Validate() error {
	return c.withDefaults().validate()
}

func (c CleanerConfig) validate() error {
	var errs config.Errors
	if c.Retention <= 0 {
		errs.Add("Retention", "must be positive, got %v", c.Retention)
	}
	switch {
	case c.InboxRetention < 0:
		errs.Add("InboxRetention", "must not be negative, got %v", c.InboxRetention)
	case c.InboxRetention != 0 && c.InboxRetention <= c.Retention:
		errs.Add("InboxRetention", "must be longer than Retention, the replay window (%v), got %v: "+
			"an event replayed from the outbox must still find its inbox row", c.Retention, c.InboxRetention)
	}
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		errs.Add("BatchSize", "must be 1..10000, got %d", c.BatchSize)
	}
	if c.Pause < 0 {
		errs.Add("Pause", "must not be negative, got %v", c.Pause)
	}
	if c.Interval < time.Second {
		errs.Add("Interval", "must be at least 1s, got %v", c.Interval)
	}
	return errs.Err()
}

// NewCleaner checks cfg and returns a Cleaner.
func NewCleaner(cfg CleanerConfig, st CleanupStore) (*Cleaner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cleaner config: %w", err)
	}
	return &Cleaner{cfg: cfg.withDefaults(), store: st}, nil
}

// Run cleans up every Interval until ctx is cancelled.
func (c *Cleaner) Run(ctx context.Context) error {
	for {
		if _, err := c.runOnce(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("cleanup failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.cfg.Interval):
		}
	}
}

func (c *Cleaner) runOnce(ctx context.Context) (store.CleanupReport, error) {
	rep, err := c.store.Cleanup(ctx, c.cfg.request())
	if c.cfg.Observer != nil && ctx.Err() == nil {
		c.cfg.Observer.CleanedUp(rep, err)
	}
	if err != nil {
		return rep, err
	}
	if rep.Events+rep.Inbox+rep.Failures > 0 {
		c.cfg.Logger.Info("cleanup deleted rows", "events", rep.Events, "inbox_rows", rep.Inbox,
			"failure_rows", rep.Failures, "batches", rep.Batches)
	}
	return rep, nil
}
