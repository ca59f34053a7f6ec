package inbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/store"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{
			ConsumerName: "inventory", Brokers: []string{"b:9092"}, Topics: []string{"orders.v1"},
			DB: &sql.DB{}, Dialect: serverErrors{}, Registry: envelope.NewRegistry(),
			Handler: HandlerFunc(func(context.Context, *sql.Tx, Message) error { return nil }),
		}
	}
	tests := []struct {
		name      string
		change    func(*Config)
		wantField string // "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"no consumer name", func(c *Config) { c.ConsumerName = "" }, "ConsumerName"},
		{"consumer name with a space", func(c *Config) { c.ConsumerName = "stock keeper" }, "ConsumerName"},
		{"consumer name too long", func(c *Config) { c.ConsumerName = strings.Repeat("x", 129) }, "ConsumerName"},
		{"no brokers", func(c *Config) { c.Brokers = nil }, "Brokers"},
		{"no topics", func(c *Config) { c.Topics = nil }, "Topics"},
		{"empty topic", func(c *Config) { c.Topics = []string{""} }, "Topics"},
		{"no db", func(c *Config) { c.DB = nil }, "DB"},
		{"no dialect", func(c *Config) { c.Dialect = nil }, "Dialect"},
		{"no registry", func(c *Config) { c.Registry = nil }, "Registry"},
		{"no handler", func(c *Config) { c.Handler = nil }, "Handler"},
		{"negative batch", func(c *Config) { c.BatchSize = -1 }, "BatchSize"},
		{"negative attempts", func(c *Config) { c.MaxAttempts = -1 }, "MaxAttempts"},
		{"backoff above max", func(c *Config) { c.RetryBackoff, c.RetryBackoffMax = time.Second, time.Millisecond }, "RetryBackoff"},
		{"negative rate", func(c *Config) { c.RateLimit = -1 }, "RateLimit"},
		{"negative tx timeout", func(c *Config) { c.TxTimeout = -time.Second }, "TxTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.change(&cfg)
			err := cfg.validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("validate = %v, want an error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{ConsumerName: "inventory"}.withDefaults()
	if c.Group != "inventory" || c.BatchSize != 1 || c.MaxAttempts != 5 || c.TxIsolation != sql.LevelReadCommitted {
		t.Errorf("defaults: %+v", c)
	}
	if got := c.DLQTopic("orders.v1"); got != "orders.v1.dlq.inventory" {
		t.Errorf("DLQTopic = %q", got)
	}
}

// serverErrors is an InboxDialect for unit tests: errServerTransient is
// the only server error it calls transient.
type serverErrors struct{ store.InboxDialect }

var errServerTransient = errors.New("server: deadlock")

func (serverErrors) IsTransient(err error) bool { return errors.Is(err, errServerTransient) }

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"the dialect's transient server error, wrapped", fmt.Errorf("handle: %w", errServerTransient), true},
		{"bad connection", driver.ErrBadConn, true},
		{"connection done", sql.ErrConnDone, true},
		{"connection refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"statement timeout", context.DeadlineExceeded, true},
		{"business error", errors.New("no such warehouse"), false},
		{"permanent", Permanent(errors.New("order refused")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTransient(serverErrors{}, tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("refused")
	err := fmt.Errorf("handle: %w", Permanent(base))
	if !IsPermanent(err) || !errors.Is(err, base) || IsPermanent(base) || Permanent(nil) != nil {
		t.Error("Permanent does not wrap as documented")
	}
}
