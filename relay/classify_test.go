package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
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
		{"no route", record.ErrNoRoute, kafka.ClassNoRoute, true},
		{"encode", &record.EncodeError{Err: errors.New("payload is not JSON")}, kafka.ClassEncode, true},
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

// TestRecordOfAStoredRow: an event with a Defect is an encoding failure
// (fatal, class encode) whatever its route, and a stored header in
// herald's prefix never reaches the record.
func TestRecordOfAStoredRow(t *testing.T) {
	enc, err := record.NewEncoder(record.Config{DefaultTopic: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	e := store.Event{ID: "0190f1c2-7d3e-7a41-8c55-9a0b1c2d3e4f", AggregateType: "order", AggregateID: "1", AggregateSeq: 3,
		EventType: "order.created", SchemaVersion: 1, Payload: []byte(`{}`),
		Headers: map[string]string{envelope.HeaderEventID: "fake", "HERALD-AGGREGATE-SEQ": "9", "tenant": "acme"}}
	rec, err := enc.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, h := range rec.Headers {
		got[strings.ToLower(h.Key)] = append(got[strings.ToLower(h.Key)], string(h.Value))
	}
	if fmt.Sprint(got[envelope.HeaderEventID]) != "["+e.ID+"]" || fmt.Sprint(got[envelope.HeaderAggregateSeq]) != "[3]" ||
		fmt.Sprint(got["tenant"]) != "[acme]" {
		t.Errorf("headers %v: want herald's once each and tenant", got)
	}
	if names := record.ReservedHeaders(e); fmt.Sprint(names) != "[HERALD-AGGREGATE-SEQ herald-event-id]" {
		t.Errorf("reserved headers %v", names)
	}

	e.Defect = &store.RowDefect{Column: "headers", Problem: "is not a JSON object of strings but a JSON array", Stored: "[]"}
	unrouted, err := record.NewEncoder(record.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = unrouted.Encode(e)
	if class, fatal := classify(err); class != kafka.ClassEncode || !fatal || !strings.Contains(err.Error(), "column headers") {
		t.Errorf("record of a defective row: %v (class %s, fatal %v); want a fatal encode error naming the column", err, class, fatal)
	}
}
