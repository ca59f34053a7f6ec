package relay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
)

// TestBackoff: base·2^attempts, capped, ±20% jitter — the schedule of
// docs/design.md with its defaults (1s base, 300s cap).
func TestBackoff(t *testing.T) {
	tests := []struct {
		attempts uint32
		want     time.Duration // with r = 0.5: no jitter
	}{
		{0, time.Second}, // never claimed: the base
		{1, 2 * time.Second},
		{2, 4 * time.Second},
		{3, 8 * time.Second},
		{4, 16 * time.Second},
		{5, 32 * time.Second},
		{6, 64 * time.Second},
		{7, 128 * time.Second},
		{8, 256 * time.Second},
		{9, 300 * time.Second},  // 512s capped
		{10, 300 * time.Second}, // 1024s capped
		{11, 300 * time.Second},
		{12, 300 * time.Second},
		{64, 300 * time.Second}, // no overflow past the cap
		{math.MaxUint32, 300 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempts=%d", tt.attempts), func(t *testing.T) {
			if got := Backoff(tt.attempts, BackoffBaseDefault, BackoffCapDefault, 0.5); got != tt.want {
				t.Errorf("Backoff(%d, r=0.5) = %v, want %v", tt.attempts, got, tt.want)
			}
			lo, hi := tt.want*8/10, tt.want*12/10
			if got := Backoff(tt.attempts, BackoffBaseDefault, BackoffCapDefault, 0); got != lo {
				t.Errorf("Backoff(%d, r=0) = %v, want %v (-20%%)", tt.attempts, got, lo)
			}
			for i := range 1000 {
				r := float64(i) / 1000 // [0, 1)
				got := Backoff(tt.attempts, BackoffBaseDefault, BackoffCapDefault, r)
				if got < lo || got >= hi {
					t.Fatalf("Backoff(%d, r=%v) = %v, outside [%v, %v)", tt.attempts, r, got, lo, hi)
				}
			}
		})
	}
	// A small cap and base, as tests and impatient operators configure.
	if got := Backoff(3, 50*time.Millisecond, 100*time.Millisecond, 0.5); got != 100*time.Millisecond {
		t.Errorf("Backoff(3, 50ms base, 100ms cap) = %v, want the 100ms cap", got)
	}
}

// TestClassify: the class and fatality the relay records for the errors
// franz-go hands its promises, including wrapped ones.
func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		class string
		fatal bool
	}{
		{"message too large", kerr.MessageTooLarge, kafka.ClassTooLarge, true},
		{"message too large as franz-go wraps it",
			fmt.Errorf("%w (uncompressed_bytes=51234, compressed_bytes=38012)", kerr.MessageTooLarge), kafka.ClassTooLarge, true},
		{"record list too large", kerr.RecordListTooLarge, kafka.ClassTooLarge, true},
		{"invalid record", kerr.InvalidRecord, kafka.ClassInvalidRecord, true},
		{"corrupt message", kerr.CorruptMessage, kafka.ClassInvalidRecord, true},
		{"invalid timestamp", kerr.InvalidTimestamp, kafka.ClassInvalidRecord, true},
		{"topic authorization", kerr.TopicAuthorizationFailed, kafka.ClassAuthorization, false},
		{"sasl authentication", kerr.SaslAuthenticationFailed, kafka.ClassAuthorization, false},
		{"unknown topic", kerr.UnknownTopicOrPartition, kafka.ClassUnknownTopic, false},
		{"invalid topic", kerr.InvalidTopicException, kafka.ClassConfiguration, false},
		{"policy violation", kerr.PolicyViolation, kafka.ClassConfiguration, false},
		{"record timeout", kgo.ErrRecordTimeout, kafka.ClassTimeout, false},
		{"record timeout with the last retry error (brokers down)",
			fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
			kafka.ClassTimeout, false},
		{"request timed out", kerr.RequestTimedOut, kafka.ClassTimeout, false},
		{"context deadline", context.DeadlineExceeded, kafka.ClassTimeout, false},
		{"not enough replicas", kerr.NotEnoughReplicas, kafka.ClassBrokerUnavailable, false},
		{"not enough replicas after append", kerr.NotEnoughReplicasAfterAppend, kafka.ClassBrokerUnavailable, false},
		{"not leader", kerr.NotLeaderForPartition, kafka.ClassBrokerUnavailable, false},
		{"leader not available", kerr.LeaderNotAvailable, kafka.ClassBrokerUnavailable, false},
		{"broker not available", kerr.BrokerNotAvailable, kafka.ClassBrokerUnavailable, false},
		{"retries exhausted", kgo.ErrRecordRetries, kafka.ClassBrokerUnavailable, false},
		{"client closed", kgo.ErrClientClosed, kafka.ClassBrokerUnavailable, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, kafka.ClassBrokerUnavailable, false},
		{"anything else", errors.New("something odd"), kafka.ClassUnknown, false},
		// The relay's own, before any Kafka I/O.
		{"no route", errNoRoute, kafka.ClassNoRoute, true},
		{"encode", encodeError{errors.New("payload is not JSON")}, kafka.ClassEncode, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, fatal := classify(tt.err)
			if class != tt.class || fatal != tt.fatal {
				t.Errorf("classify(%v) = %q, fatal %v; want %q, fatal %v", tt.err, class, fatal, tt.class, tt.fatal)
			}
		})
	}
	if !suspectClass(kafka.ClassTooLarge) || !suspectClass(kafka.ClassInvalidRecord) || suspectClass(kafka.ClassEncode) {
		t.Error("only the batch-level classes (too_large, invalid_record) may be retried in isolation before quarantine")
	}
}

// TestRoute: the routing rule the relay and replays share.
func TestRoute(t *testing.T) {
	topics := map[string]string{"order": "orders.v1"}
	tests := []struct {
		typ, def, want string
		ok             bool
	}{
		{"order", "", "orders.v1", true},
		{"order", "misc.v1", "orders.v1", true},
		{"invoice", "misc.v1", "misc.v1", true},
		{"invoice", "", "", false},
	}
	for _, tt := range tests {
		if got, ok := route(topics, tt.def, tt.typ); got != tt.want || ok != tt.ok {
			t.Errorf("route(%q, default %q) = %q, %v; want %q, %v", tt.typ, tt.def, got, ok, tt.want, tt.ok)
		}
	}
}
