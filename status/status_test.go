package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/migrations"
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
			wantNone: []string{"STOPPED BY KAFKA CONFIGURATION", "QUARANTINED", "STREAM", "COPIED TABLES"},
		},
		{
			name: "a WAL stream and its slot",
			rep: status.Report{At: at, Stream: &status.Stream{Source: "wal", Leader: "r1", Epoch: 3, LeaseLeft: 6 * time.Second,
				Position: "pg-lsn:2/A8B984D0", Slots: []store.ReplicationSlot{{Name: "herald_orders", Plugin: "pgoutput", Active: true,
					ActivePID: 42, RetainedBytes: 5 << 20, LagBytes: 2048, WALStatus: "reserved", SafeWALBytes: 3 << 30}}}},
			want: []string{"STREAM (--source wal)", "leader", "r1", "slot herald_orders", "5.0 MiB retained", "streaming (pid 42)",
				"confirmed 2.0 KiB behind", "3.0 GiB more before max_slot_wal_keep_size"},
		},
		{
			name: "a WAL checkpoint without its slot",
			rep:  status.Report{At: at, Stream: &status.Stream{Source: "poll", Position: "pg-lsn:2/A8B984D0"}},
			want: []string{"STREAM (--source wal)", "slot (none)", "MISSING: the next --source wal leader sweeps"},
		},
		{
			name: "an invalidated slot",
			rep: status.Report{At: at, Stream: &status.Stream{Source: "poll", Slots: []store.ReplicationSlot{{Name: "old_connector",
				RetainedBytes: -1, LagBytes: -1, WALStatus: "lost", SafeWALBytes: -1}}}},
			want: []string{"STREAM (--source wal)", "slot old_connector", "- retained", "INVALIDATED"},
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
			name: "a copied foreign table",
			rep: status.Report{At: at, CopiedTables: []migrations.InstalledMapping{{Mapping: migrations.Mapping{Table: "outbox"},
				Trigger: "herald_copy_outbox", InstalledAt: at.Add(-time.Hour)}}},
			want: []string{"COPIED TABLES", "outbox", "herald_copy_outbox", "2026-12-04T09:00:00Z"},
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
