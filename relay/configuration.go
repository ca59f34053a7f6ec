package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/herald-outbox/herald/internal/redact"
	"github.com/herald-outbox/herald/kafka"
)

const (
	// configurationLogInterval is how often a relay stopped by a
	// configuration failure repeats it in its log (it says so at once when
	// the failure starts or changes, and when it ends).
	configurationLogInterval = time.Minute
	// probeTimeout bounds the connection check before a claim.
	probeTimeout = 5 * time.Second
)

// ConfigurationFailure is a failure of the relay's Kafka configuration, not
// of any event: the brokers refuse its credentials or its certificate, it
// refuses theirs, or an ACL denies it a topic (kafka.IsConfiguration). The
// relay publishes nothing it concerns until an operator fixes it: the
// events stay pending, their attempts are not counted, none is
// quarantined, and the relay reports itself not ready.
type ConfigurationFailure struct {
	// Class is kafka.ClassAuthentication, kafka.ClassAuthorization or
	// kafka.ClassTLS.
	Class string
	// Since is when the relay first met the failure.
	Since time.Time
	err   error
}

// Error says what is wrong, scrubbed of secrets.
func (e *ConfigurationFailure) Error() string {
	return configurationMessage(e.Class, e.err)
}

// Unwrap returns the client's error.
func (e *ConfigurationFailure) Unwrap() error { return e.err }

// configurationMessage is what the log, /readyz and last_error say about a
// configuration failure.
func configurationMessage(class string, err error) string {
	return redact.Truncate(redact.Secrets(fmt.Sprintf("kafka %s failure (a configuration problem, not the event's): %v", class, err)), 900)
}

// ConfigurationObserver is an Observer that is also told when a
// configuration failure stops publishing (class is its kind) and when
// publishing resumes (class is ""). package metrics implements it.
type ConfigurationObserver interface {
	ConfigurationFailure(class string)
}

// configState is what the relay knows about its Kafka configuration.
type configState struct {
	mu  sync.Mutex
	err *ConfigurationFailure
	// probed: the connection was checked once (before the first claim).
	probed bool
	logged time.Time
}

// ConfigurationFailure returns the configuration failure that stops the
// relay from publishing (a *ConfigurationFailure), or nil. A readiness
// check reports it; it clears once Kafka takes the relay's credentials
// again and, for an ACL, once a record is published (or none waits).
func (r *Relay) ConfigurationFailure() error {
	r.config.mu.Lock()
	defer r.config.mu.Unlock()
	if r.config.err == nil {
		return nil
	}
	return r.config.err
}

// pinger is the producer's connection check (*kgo.Client has it).
type pinger interface {
	Ping(ctx context.Context) error
}

// checkConfiguration checks the connection to Kafka before a claim, the
// first time and while a configuration failure stops publishing, so that
// a relay with wrong credentials or certificates leases nothing at all.
// An ACL that denies a topic does not show here: only publishing to it
// tells, and outcome reports it.
func (r *Relay) checkConfiguration(ctx context.Context) error {
	p, ok := r.producer.(pinger)
	if !ok {
		return nil
	}
	r.config.mu.Lock()
	need := !r.config.probed || r.config.err != nil
	r.config.mu.Unlock()
	if !need {
		return nil
	}
	pingCtx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := p.Ping(pingCtx)
	cancel()
	r.config.mu.Lock()
	r.config.probed = true
	connectionFixed := err == nil && r.config.err != nil && r.config.err.Class != kafka.ClassAuthorization
	r.config.mu.Unlock()
	if connectionFixed {
		// The brokers take the client's credentials and certificates
		// again; an ACL problem, if any, shows at the next publication.
		r.configResolved()
	}
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if class, _ := kafka.Classify(err); kafka.IsConfiguration(class) {
		return r.configFailed(class, err)
	}
	// Kafka is down or slow: claiming and publishing handle that as they
	// always have (the events back off).
	return nil
}

// configFailed records a configuration failure, logs it when it is new or
// changed and otherwise once per configurationLogInterval, and returns it.
func (r *Relay) configFailed(class string, err error) *ConfigurationFailure {
	now := time.Now()
	msg := configurationMessage(class, err)
	r.config.mu.Lock()
	prev := r.config.err
	changed := prev == nil || prev.Class != class || prev.Error() != msg
	ce := &ConfigurationFailure{Class: class, Since: now, err: err}
	if prev != nil && prev.Class == class {
		ce.Since = prev.Since
	}
	r.config.err = ce
	logNow := changed || now.Sub(r.config.logged) >= configurationLogInterval
	if logNow {
		r.config.logged = now
	}
	r.config.mu.Unlock()
	if logNow {
		r.log.Error("publishing stopped by a Kafka configuration failure; no event is charged for it, fix the configuration (docs/runbooks/authentication.md)",
			"error_class", class, "error", msg, "since", ce.Since)
	}
	if prev == nil || prev.Class != class {
		if o, ok := r.cfg.Observer.(ConfigurationObserver); ok {
			o.ConfigurationFailure(class)
		}
	}
	return ce
}

// configResolved clears a configuration failure once publishing works.
func (r *Relay) configResolved() {
	r.config.mu.Lock()
	prev := r.config.err
	r.config.err = nil
	r.config.mu.Unlock()
	if prev == nil {
		return
	}
	r.log.Info("Kafka configuration failure resolved; publishing resumed",
		"error_class", prev.Class, "stopped_for", time.Since(prev.Since).Round(time.Millisecond).String())
	if o, ok := r.cfg.Observer.(ConfigurationObserver); ok {
		o.ConfigurationFailure("")
	}
}
