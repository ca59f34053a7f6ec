package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
)

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
		{"sasl authentication", kerr.SaslAuthenticationFailed, kafka.ClassAuthentication, false},
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
