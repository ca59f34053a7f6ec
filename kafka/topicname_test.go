package kafka_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/kafka"
)

// TestValidateTopicName: Kafka's rule for topic names (ASCII letters,
// digits, '.', '_' and '-'; 1 to 249 characters; not "." or ".."), so a
// bad route is refused when it is parsed instead of failing every event.
func TestValidateTopicName(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		ok    bool
	}{
		{"plain", "orders.v1", true},
		{"every legal character", "Orders_v1-replay.2", true},
		{"249 characters", strings.Repeat("a", 249), true},
		{"internal topics are legal names", "__consumer_offsets", true},
		{"empty", "", false},
		{"space and bang", "qa bad!", false},
		{"slash", "orders/v1", false},
		{"colon", "orders:v1", false},
		{"non-ASCII letter", "commandes.été", false},
		{"250 characters", strings.Repeat("a", 250), false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"trailing newline", "orders.v1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := kafka.ValidateTopicName(tt.topic)
			if (err == nil) != tt.ok {
				t.Errorf("ValidateTopicName(%q) = %v, want ok %v", tt.topic, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "topic") {
				t.Errorf("error %q does not say it is about a topic name", err)
			}
		})
	}
}
