package relay

import (
	"context"
	"errors"
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
// of any event (kafka.IsConfiguration): the brokers refuse its credentials
// or its certificate, it refuses theirs, an ACL denies it a topic, or Kafka
// refuses the topic itself (an internal topic, a policy). The relay
// publishes nothing it concerns until an operator fixes it: the events
// stay pending, their attempts are not counted, none is quarantined, and
// the relay reports itself not ready and backs off (docs/security.md).
type ConfigurationFailure struct {
	// Class is kafka.ClassAuthentication or kafka.ClassTLS (every
	// connection refused), kafka.ClassAuthorization or
	// kafka.ClassConfiguration (a topic refused).
	Class string
	// Topic is the topic refused, when publishing to it showed the
	// failure; "" when the connection check did.
	Topic string
	// Since is when the relay first met the failure.
	Since time.Time
	err   error
}

// Error says what is wrong, scrubbed of secrets.
func (e *ConfigurationFailure) Error() string {
	where := ""
	if e.Topic != "" {
		where = " on topic " + e.Topic
	}
	return redact.Truncate(redact.Secrets(fmt.Sprintf("kafka %s failure%s (a configuration problem, not the event's): %v",
		e.Class, where, e.err)), 900)
}

// Unwrap returns the client's error.
func (e *ConfigurationFailure) Unwrap() error { return e.err }

// isConfigurationFailure says whether err is (or wraps) a
// *ConfigurationFailure.
func isConfigurationFailure(err error) bool {
	var f *ConfigurationFailure
	return errors.As(err, &f)
}

// refusesConnection says whether class refuses every connection of the
// client, so that a successful connection check shows it fixed; the
// classes that refuse a topic show fixed only by publishing to it.
func refusesConnection(class string) bool {
	return class == kafka.ClassAuthentication || class == kafka.ClassTLS
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
// relay from publishing (a *ConfigurationFailure), or nil. /readyz reports
// it; it clears once Kafka takes the relay's credentials again and, for a
// refused topic, once a record is published (or none waits).
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
// A refused topic (an ACL, an invalid topic, a policy) does not show here:
// only publishing to it tells, and outcome reports it.
func (r *Relay) checkConfiguration(ctx context.Context) error {
	p, ok := r.publisher.producer.(pinger)
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
	connectionFixed := err == nil && r.config.err != nil && refusesConnection(r.config.err.Class)
	r.config.mu.Unlock()
	if connectionFixed {
		// The brokers take the client's credentials and certificates
		// again; a refused topic, if any, shows at the next publication.
		r.configResolved()
	}
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if class, _ := kafka.Classify(err); kafka.IsConfiguration(class) {
		return r.configFailed(&ConfigurationFailure{Class: class, err: err})
	}
	// Kafka is down or slow: claiming and publishing handle that as they
	// always have (the events back off).
	return nil
}

// settledConfiguration updates the relay's configuration failure once a
// batch is settled: the batch met f (nil for none) and published
// published records. It returns the failure, for Run to back off.
func (r *Relay) settledConfiguration(f *ConfigurationFailure, published int) error {
	switch {
	case f != nil:
		return r.configFailed(f)
	case published > 0:
		r.configResolved()
	}
	return nil
}

// configFailed records a configuration failure, logs it when it is new or
// changed and otherwise once per configurationLogInterval, and returns it.
// Another topic refused for the same reason is no change: relays with
// several refused topics would otherwise log at every batch.
func (r *Relay) configFailed(ce *ConfigurationFailure) *ConfigurationFailure {
	now := time.Now()
	class := ce.Class
	r.config.mu.Lock()
	prev := r.config.err
	changed := prev == nil || prev.Class != class || prev.err.Error() != ce.err.Error()
	ce.Since = now
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
		attrs := []any{"error_class", class, "error", ce.Error(), "since", ce.Since}
		if ce.Topic != "" {
			attrs = append(attrs, "topic", ce.Topic)
		}
		r.log.Error("publishing stopped by a Kafka configuration failure; no event is charged for it, fix the configuration (docs/runbooks/authentication.md)",
			attrs...)
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
