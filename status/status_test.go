package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/store"
)

// TestWriteText: the text report says what each case needs to say; the
// database's part of it is covered against real servers by
// internal/cli's status tests.
func TestWriteText(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		rep      status.Report
		want     []string
		wantNone []string
	}{
		{
			name: "empty",
			rep:  status.Report{At: at, FreeBuckets: 64},
			want: []string{"herald status at 2026-12-04T10:00:00Z", "ready (claimable)", "-", "(no relay)", "64",
				"FAILURES IN THE LAST HOUR", "  none", "no consumer group reads these topics"},
			wantNone: []string{"STOPPED BY KAFKA CONFIGURATION", "QUARANTINED", "STREAM"},
		},
		{
			name: "a configuration stop and no failure",
			rep: status.Report{At: at, Backlog: store.Backlog{Ready: 6, OldestReadyAge: 150 * time.Second},
				ConfigurationStops: []status.ConfigurationStop{{Class: kafka.ClassAuthorization, Events: 3, OldestAge: 150 * time.Second}}},
			want:     []string{"2m30s old", "none charged to events (Kafka configuration stops below)", "STOPPED BY KAFKA CONFIGURATION", "authorization", "3"},
			wantNone: []string{"  none\n"},
		},
		{
			name: "failures, an expired relay, a missing topic",
			rep: status.Report{At: at, Backlog: store.Backlog{FailuresLastHour: map[string]int64{"timeout": 4}},
				Relays:        []status.Relay{{RelayID: "r1", Buckets: 64, Epoch: 9, LeaseLeft: -5 * time.Second}},
				MissingTopics: []string{"orders.v1"}},
			want:     []string{"timeout", "4", "EXPIRED 5s ago", "orders.v1", "no such topic", "herald topics create orders.v1"},
			wantNone: []string{"none charged", "/-1"},
		},
		{
			name: "Kafka unreachable",
			rep:  status.Report{At: at, KafkaError: "kafka at [127.0.0.1:1] does not answer"},
			want: []string{"KAFKA: kafka at [127.0.0.1:1] does not answer"}, wantNone: []string{"PARTITIONS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in\n%s", w, out)
				}
			}
			for _, w := range tt.wantNone {
				if strings.Contains(out, w) {
					t.Errorf("%q in\n%s", w, out)
				}
			}
		})
	}
}
