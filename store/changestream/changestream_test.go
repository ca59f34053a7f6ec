package changestream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store/changestream"
)

func TestConfigDefaults(t *testing.T) {
	c := changestream.WithDefaults(changestream.Config{})
	if c.Logger == nil || c.HeartbeatPeriod != changestream.HeartbeatPeriodDefault || c.Timeout != changestream.TimeoutDefault ||
		c.ReconnectBackoffBase != changestream.ReconnectBackoffBaseDefault ||
		c.ReconnectBackoffCap != changestream.ReconnectBackoffCapDefault || c.LagInterval != changestream.LagIntervalDefault ||
		c.ChunkEvents != changestream.ChunkEventsDefault {
		t.Fatalf("defaults: %+v", c)
	}
	if c := changestream.WithDefaults(changestream.Config{ReconnectBackoffBase: time.Minute}); c.ReconnectBackoffCap != time.Minute {
		t.Errorf("a base above the default cap: cap %v, want the base", c.ReconnectBackoffCap)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    changestream.Config
		fields []string
	}{
		{"defaults", changestream.Config{}, nil},
		{"negatives", changestream.Config{HeartbeatPeriod: -1, Timeout: -1, ReconnectBackoffBase: -1, ReconnectBackoffCap: -1,
			LagInterval: -1, ChunkEvents: -1},
			[]string{"HeartbeatPeriod", "Timeout", "ReconnectBackoffBase", "ReconnectBackoffCap", "LagInterval", "ChunkEvents"}},
		{"cap under base", changestream.Config{ReconnectBackoffBase: time.Second, ReconnectBackoffCap: time.Millisecond},
			[]string{"ReconnectBackoffCap"}},
		{"cap under the default base", changestream.Config{ReconnectBackoffCap: time.Millisecond}, []string{"ReconnectBackoffCap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var got []string
			for _, leaf := range config.Leaves(err) {
				var ce *config.Error
				if !errors.As(leaf, &ce) {
					t.Fatalf("%v is not a *config.Error", leaf)
				}
				got = append(got, ce.Field)
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("invalid fields %v, want %v (%v)", got, tc.fields, err)
			}
		})
	}
}

func TestLocateColumns(t *testing.T) {
	names := []string{"id", "aggregate_type", "extra", "aggregate_id", "aggregate_seq", "event_type", "schema_version",
		"payload", "headers", "occurred_at", "published_at"}
	c, err := changestream.LocateColumns(names)
	if err != nil {
		t.Fatal(err)
	}
	for col, i := range c.At {
		if names[i] != changestream.Column(col).String() {
			t.Errorf("column %s located at %d (%s)", changestream.Column(col), i, names[i])
		}
	}
	if c.Fields != -1 {
		t.Errorf("fields at %d in a table without it", c.Fields)
	}
	c, err = changestream.LocateColumns(append(names, changestream.FieldsColumn))
	if err != nil || c.Fields != len(names) {
		t.Errorf("fields at %d (%v), want %d", c.Fields, err, len(names))
	}
	_, err = changestream.LocateColumns(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "payload" }))
	if err == nil || !strings.Contains(err.Error(), "no column payload") {
		t.Errorf("without payload: %v, want the column named", err)
	}
}

// position is a test position: a number, as "p:<n>".
type position int

func (p position) String() string { return fmt.Sprintf("p:%d", int(p)) }
func (p position) Reached(target position) (bool, error) {
	return p >= target, nil
}

func parse(s string) (position, error) {
	var n int
	if _, err := fmt.Sscanf(s, "p:%d", &n); err != nil {
		return 0, fmt.Errorf("position %q: %w", s, err)
	}
	return position(n), nil
}

func TestPositions(t *testing.T) {
	ps := changestream.Positions[position]{Kind: "test", Parse: parse}
	if p, err := ps.Checkpoint("p:7"); err != nil || p != 7 {
		t.Errorf("Checkpoint(p:7) = %v, %v", p, err)
	}
	if _, err := ps.Checkpoint("pg-lsn:0/1"); !errors.Is(err, changestream.ErrPositionGone) || !strings.Contains(err.Error(), "not a test position") {
		t.Errorf("another source's checkpoint: %v, want ErrPositionGone naming the kind", err)
	}
	for _, tc := range []struct {
		position, target string
		want             bool
	}{{"p:2", "p:1", true}, {"p:1", "p:1", true}, {"p:1", "p:2", false}} {
		if got, err := ps.Reached(tc.position, tc.target); err != nil || got != tc.want {
			t.Errorf("Reached(%s, %s) = %v, %v; want %v", tc.position, tc.target, got, err, tc.want)
		}
	}
	if _, err := ps.Reached("p:1", "nonsense"); err == nil {
		t.Error("Reached accepted text that is no position")
	}
	if s, err := changestream.Text(position(3), nil); s != "p:3" || err != nil {
		t.Errorf("Text = %q, %v", s, err)
	}
	if s, err := changestream.Text(position(3), errors.New("no head")); s != "" || err == nil {
		t.Errorf("Text of a failed head = %q, %v", s, err)
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{changestream.ErrClosed, true},
		{fmt.Errorf("%w: slot dropped", changestream.ErrPositionGone), true},
		{fmt.Errorf("read: %w", &changestream.DecodeError{Err: errors.New("bad row")}), true},
		{errors.New("connection reset by peer"), false},
	} {
		if got := changestream.Permanent(tc.err); got != tc.want {
			t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// logBuffer collects a logger's lines, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestReconnector(t *testing.T) {
	var logs logBuffer
	cfg := changestream.WithDefaults(changestream.Config{ReconnectBackoffBase: time.Millisecond, ReconnectBackoffCap: 2 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rc := changestream.NewReconnector(cfg, "test")
	failures := 3
	calls := 0
	connect := func(context.Context) error {
		calls++
		if calls <= failures {
			return errors.New("refused")
		}
		return nil
	}
	retry := func(error) error { return nil }
	if err := rc.Reconnect(context.Background(), "p:1", connect, retry); err != nil {
		t.Fatal(err)
	}
	if calls != failures+1 {
		t.Errorf("%d attempts, want %d", calls, failures+1)
	}
	if n := strings.Count(logs.String(), "test: reconnection failed"); n != failures {
		t.Errorf("%d failures logged, want %d:\n%s", n, failures, logs.String())
	}
	if !strings.Contains(logs.String(), "test: stream reconnected") || !strings.Contains(logs.String(), "attempt=4") {
		t.Errorf("the reconnection is not logged with its attempt:\n%s", logs.String())
	}

	fatal := errors.New("no grant")
	calls, failures = 0, 1
	rc.Progressed()
	err := rc.Reconnect(context.Background(), "p:1", connect, func(err error) error { return fatal })
	if !errors.Is(err, fatal) || calls != 1 {
		t.Errorf("a permanent failure: %v after %d attempts, want it after 1", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls, failures = 0, 100
	if err := rc.Reconnect(ctx, "p:1", connect, retry); !errors.Is(err, context.Canceled) {
		t.Errorf("an ended context: %v", err)
	}
}

func TestPollLag(t *testing.T) {
	var logs logBuffer
	cfg := changestream.WithDefaults(changestream.Config{LagInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two failures, then successes: one warning, one recovery.
	polls := make(chan int, 100)
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		changestream.PollLag(ctx, cfg, "test", "the head", func(pctx context.Context) error {
			if _, ok := pctx.Deadline(); !ok {
				t.Error("a poll without a timeout")
			}
			n++
			select {
			case polls <- n:
			default: // the test stopped listening
			}
			if n <= 2 {
				return errors.New("unreachable")
			}
			return nil
		})
	}()
	for p := range polls {
		if p == 5 {
			break
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("PollLag did not return once its context ended")
	}
	if n := strings.Count(logs.String(), "test: cannot read the head; lag unknown"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "test: reading the head again"); n != 1 {
		t.Errorf("%d recoveries logged, want 1:\n%s", n, logs.String())
	}
}
