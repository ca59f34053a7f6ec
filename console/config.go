package console

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

// Defaults of Config.
const (
	// RefreshIntervalDefault is how often the live parts of a page
	// (overview, replays) refresh themselves.
	RefreshIntervalDefault = 5 * time.Second
	// SessionTTLDefault is how long a login lasts.
	SessionTTLDefault = 12 * time.Hour
	// BulkLimitDefault is the most events one bulk action changes.
	BulkLimitDefault = 1000
	// ReasonMaxChars is the longest reason an action takes (the audit
	// log's reason column).
	ReasonMaxChars = 1000
)

// Config is what NewHandler serves.
type Config struct {
	// Store is the outbox database. Required.
	Store *store.Store
	// Prefix is the path the handler is mounted under ("/herald" serves
	// "/herald/", "/herald/events", ...); links and cookies use it.
	// Defaults to "" (the root).
	Prefix string
	// Users may sign in (basic auth, bearer token or the login page). Nil
	// or empty serves everyone as an operator without asking: only for a
	// console reachable from this machine alone (herald console refuses
	// any other address without users). Defaults to none.
	Users []User
	// Kafka, when set, adds the partitions and the consumer lag to the
	// overview. Defaults to none.
	Kafka *KafkaConfig
	// Replay, when set, lets operators start and cancel replays (package
	// relay's Replayer, as herald replay). Defaults to none: the replay
	// page then lists the saved replays only.
	Replay *ReplayConfig
	// RefreshInterval is how often the live parts of a page refresh.
	// Defaults to 5 s.
	RefreshInterval time.Duration
	// SessionTTL is how long a login lasts. Defaults to 12 h.
	SessionTTL time.Duration
	// SecureCookies marks the session cookie Secure: set it when the
	// console is served over TLS (herald console does with
	// --tls-cert-file), or behind a proxy that terminates TLS. Defaults to
	// false.
	SecureCookies bool
	// BulkLimit is the most events one bulk action changes. Defaults to
	// 1000.
	BulkLimit int
	// Logger records actions and failures. Defaults to slog.Default().
	Logger *slog.Logger
}

// KafkaConfig is the Kafka part of the overview, as herald status reads it.
type KafkaConfig struct {
	// Admin reads the cluster. Required.
	Admin *kadm.Client
	// Topics are the topics shown. Required.
	Topics []string
	// Groups are the consumer groups shown. Defaults to every group that
	// reads Topics.
	Groups []string
}

// ReplayConfig lets the console run replays, with herald replay's rules.
type ReplayConfig struct {
	// Producer publishes the replayed records (kafka.NewProducer).
	// Required.
	Producer relay.Producer
	// Admin creates the replay topics like their live topics. Required.
	Admin *kadm.Client
	// Topics routes aggregate types to their live topics, as the relay's.
	// Defaults to relay.TopicsDefault.
	Topics map[string]string
	// DefaultTopic is the live topic of the aggregate types Topics does not
	// name. Defaults to "".
	DefaultTopic string
	// Records are the record formats, as the relay's Config.Records: a
	// replayed record is the live one. Defaults to herald's format.
	Records record.FormatConfig
	// Suffix names a replay topic: the live topic plus it. Defaults to
	// ".replay".
	Suffix string
}

// Role is what a user may do.
type Role string

// Roles.
const (
	// RoleReadOnly reads every page but payloads, and acts on nothing.
	RoleReadOnly Role = "read-only"
	// RoleOperator also retries and discards quarantined events, starts
	// and cancels replays, and sees payloads.
	RoleOperator Role = "operator"
)

// User is one who may sign in.
type User struct {
	Name string
	Role Role
	// Secret is the password of basic auth and the login page, and the
	// bearer token.
	Secret string
}

// String shows the user without the secret.
func (u User) String() string { return u.Name + " (" + string(u.Role) + ")" }

// GoString shows the user without the secret.
func (u User) GoString() string {
	return "console.User{Name: " + fmt.Sprintf("%q", u.Name) + ", Role: " + string(u.Role) + "}"
}

// validate fills defaults and checks cfg, naming every bad field.
func (cfg *Config) validate() error {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("Store: required"))
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix != "" && (!strings.HasPrefix(cfg.Prefix, "/") || strings.ContainsAny(cfg.Prefix, "?#\"'<> ")) {
		errs = append(errs, fmt.Errorf("Prefix: %q must be a path starting with / (as /herald)", cfg.Prefix))
	}
	seen := map[string]bool{}
	for i, u := range cfg.Users {
		switch {
		case u.Name == "" || strings.ContainsAny(u.Name, ": \t\r\n"):
			errs = append(errs, fmt.Errorf("Users[%d]: name %q: must be non-empty, without spaces or ':'", i, u.Name))
		case seen[u.Name]:
			errs = append(errs, fmt.Errorf("Users[%d]: %q appears twice", i, u.Name))
		}
		seen[u.Name] = true
		if u.Role != RoleReadOnly && u.Role != RoleOperator {
			errs = append(errs, fmt.Errorf("Users[%d] (%s): role %q is neither %s nor %s", i, u.Name, u.Role, RoleReadOnly, RoleOperator))
		}
		if len(u.Secret) < 12 {
			errs = append(errs, fmt.Errorf("Users[%d] (%s): secret has %d characters, at least 12 are needed", i, u.Name, len(u.Secret)))
		}
	}
	if k := cfg.Kafka; k != nil && (k.Admin == nil || len(k.Topics) == 0) {
		errs = append(errs, errors.New("Kafka: Admin and Topics are required"))
	}
	if r := cfg.Replay; r != nil {
		if r.Producer == nil || r.Admin == nil {
			errs = append(errs, errors.New("Replay: Producer and Admin are required"))
		}
		if r.Topics == nil {
			r.Topics = relay.TopicsDefault
		}
		if r.Suffix == "" {
			r.Suffix = relay.ReplayTopicSuffix
		}
		for _, live := range liveTopics(r.Topics, r.DefaultTopic) {
			if err := kafka.ValidateTopicName(live + r.Suffix); err != nil {
				errs = append(errs, fmt.Errorf("Replay.Suffix: the replay topic of %s: %w", live, err))
			}
		}
		if err := r.Records.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("Replay.Records: %w", err))
		}
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = RefreshIntervalDefault
	}
	if cfg.RefreshInterval < time.Second {
		errs = append(errs, fmt.Errorf("RefreshInterval: %v, at least 1s", cfg.RefreshInterval))
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = SessionTTLDefault
	}
	if cfg.SessionTTL < time.Minute {
		errs = append(errs, fmt.Errorf("SessionTTL: %v, at least 1m", cfg.SessionTTL))
	}
	if cfg.BulkLimit == 0 {
		cfg.BulkLimit = BulkLimitDefault
	}
	if cfg.BulkLimit < 1 || cfg.BulkLimit > 100_000 {
		errs = append(errs, fmt.Errorf("BulkLimit: %d, want 1 to 100000", cfg.BulkLimit))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return errors.Join(errs...)
}

// liveTopics lists the live topics of routes, sorted, without repeats.
func liveTopics(routes map[string]string, defaultTopic string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range routes {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if defaultTopic != "" && !seen[defaultTopic] {
		out = append(out, defaultTopic)
	}
	sortStrings(out)
	return out
}
