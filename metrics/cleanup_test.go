package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-outbox/herald/metrics"
	"github.com/herald-outbox/herald/store"
)

// TestCleanupCounts: a pass counts by result and table, and only a
// successful one moves the last-success time the cleanup alert watches.
func TestCleanupCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := metrics.NewCleanup(reg)
	if got := gather(t, reg, "herald_cleanup_passes_total", map[string]string{"result": "failure"}); got != 0 {
		t.Fatalf("failure passes before any pass = %v, want a series at 0", got)
	}
	c.CleanedUp(store.CleanupReport{Events: 4, Failures: 2, Inbox: 1}, nil)
	c.CleanedUp(store.CleanupReport{Events: 1}, errors.New("database away"))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"herald_cleanup_passes_total", map[string]string{"result": "success"}, 1},
		{"herald_cleanup_passes_total", map[string]string{"result": "failure"}, 1},
		{"herald_cleanup_deleted_rows_total", map[string]string{"table": "outbox_events"}, 5},
		{"herald_cleanup_deleted_rows_total", map[string]string{"table": "failures"}, 2},
		{"herald_cleanup_deleted_rows_total", map[string]string{"table": "consumed_events"}, 1},
	} {
		if got := gather(t, reg, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	last := gather(t, reg, "herald_cleanup_last_success_timestamp_seconds", nil)
	if now := float64(time.Now().Unix()); last < now-60 || last > now+1 {
		t.Errorf("last success = %v, want about %v", last, now)
	}
}

// TestSourceAndSweeps: the info gauge names one source, and a sweep counts
// under its reason, each reason's series present at 0 from the start.
func TestSourceAndSweeps(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.NewRelay(reg)
	if got := gather(t, reg, "herald_relay_stream_sweeps_total", map[string]string{"reason": "position_lost"}); got != 0 {
		t.Fatalf("position_lost sweeps at start = %v, want a series at 0", got)
	}
	m.Started("poll")
	m.Started("stream")
	if got := gather(t, reg, "herald_relay_info", map[string]string{"source": "poll"}); got != -1 {
		t.Errorf("herald_relay_info{source=poll} = %v after Started(stream), want absent", got)
	}
	if got := gather(t, reg, "herald_relay_info", map[string]string{"source": "stream"}); got != 1 {
		t.Errorf("herald_relay_info{source=stream} = %v, want 1", got)
	}
	m.Swept(false, 10)
	m.Swept(true, 3)
	m.Swept(true, 0)
	if got := gather(t, reg, "herald_relay_stream_sweeps_total", map[string]string{"reason": "start"}); got != 1 {
		t.Errorf("start sweeps = %v, want 1", got)
	}
	if got := gather(t, reg, "herald_relay_stream_sweeps_total", map[string]string{"reason": "position_lost"}); got != 2 {
		t.Errorf("position_lost sweeps = %v, want 2", got)
	}
}

// lostSlot reads one invalidated slot and one healthy one.
type lostSlot struct{ fixedBacklog }

func (lostSlot) ReplicationSlots(context.Context) ([]store.ReplicationSlot, bool, error) {
	return []store.ReplicationSlot{{Name: "gone", WALStatus: "lost"}, {Name: "fine", WALStatus: "reserved", Active: true}}, true, nil
}

// TestSlotInvalidated: wal_status lost shows as 1, any other status as 0.
func TestSlotInvalidated(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := metrics.NewBacklog(reg, lostSlot{}, time.Hour, nil)
	metrics.SampleBacklog(context.Background(), b)
	if got := gather(t, reg, "herald_stream_slot_invalidated", map[string]string{"slot": "gone"}); got != 1 {
		t.Errorf("invalidated{slot=gone} = %v, want 1", got)
	}
	if got := gather(t, reg, "herald_stream_slot_invalidated", map[string]string{"slot": "fine"}); got != 0 {
		t.Errorf("invalidated{slot=fine} = %v, want 0", got)
	}
}
