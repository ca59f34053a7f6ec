package kafka

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScrubError: the DLQ's error header goes through the same scrubbing as
// the relay's last_error (internal/redact, tested there in depth).
func TestScrubError(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "duplicate key", "duplicate key"},
		{"go mysql dsn", "open herald:s3cret@tcp(db:3306)/herald failed", "open herald:REDACTED@tcp(db:3306)/herald failed"},
		{"url user info", "dial kafka://app:pw@broker:9092", "dial kafka://app:REDACTED@broker:9092"},
		{"password pair", "login failed: password=hunter2 user=x", "login failed: password=REDACTED user=x"},
		{"bare bearer", "sent Bearer eyJhbGciOiJIUzI1NiJ9.x", "sent Bearer REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ScrubError(tt.in); got != tt.want {
				t.Errorf("ScrubError(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrubErrorTruncatesOnACharacterBoundary(t *testing.T) {
	got := ScrubError(strings.Repeat("é", 1200)) // 2400 bytes
	if n := utf8.RuneCountInString(got); n != DLQErrorMaxLen || !utf8.ValidString(got) {
		t.Errorf("%d characters, valid UTF-8 %v; want %d characters", n, utf8.ValidString(got), DLQErrorMaxLen)
	}
	// Cut in characters, as the outbox's last_error: 800 two-byte
	// characters (1600 bytes) are kept whole.
	if in := strings.Repeat("é", 800); ScrubError(in) != in {
		t.Errorf("ScrubError cut a %d-character text", utf8.RuneCountInString(in))
	}
}

func TestDeadLetterRecord(t *testing.T) {
	orig := &kgo.Record{Topic: "orders.v1", Partition: 3, Offset: 42, Key: []byte("9182"), Value: []byte("{bad"),
		Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("tp")}, {Key: HeaderDLQErrorClass, Value: []byte("old")}}}
	rec := deadLetterRecord("orders.v1.dlq.inventory", DeadLetter{
		Record: orig, Class: "malformed", Err: errors.New("bad json"), Consumer: "inventory",
		FailedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	})
	got := map[string][]string{}
	for _, h := range rec.Headers {
		got[h.Key] = append(got[h.Key], string(h.Value))
	}
	want := map[string]string{
		"traceparent": "tp", HeaderDLQErrorClass: "malformed", HeaderDLQError: "bad json",
		HeaderDLQTopic: "orders.v1", HeaderDLQPartition: "3", HeaderDLQOffset: "42",
		HeaderDLQConsumer: "inventory", HeaderDLQAttempts: "0", HeaderDLQFailedAt: "2026-01-02T03:04:05Z",
	}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("header %s = %v, want [%s]", k, got[k], v)
		}
	}
	if rec.Topic != "orders.v1.dlq.inventory" || string(rec.Key) != "9182" || string(rec.Value) != "{bad" {
		t.Errorf("record %s key %q value %q", rec.Topic, rec.Key, rec.Value)
	}
}
