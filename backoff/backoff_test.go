package backoff

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestDelayRelaySchedule: base·2^attempts, capped, ±20% jitter — the
// relay's schedule of docs/design.md with its defaults (1s base, 300s cap):
// the specification's min(300 s, 2^attempts s).
func TestDelayRelaySchedule(t *testing.T) {
	const base, ceiling = time.Second, 300 * time.Second
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
			step := int(tt.attempts)
			if got := Delay(step, base, ceiling, 0.5); got != tt.want {
				t.Errorf("Delay(%d, r=0.5) = %v, want %v", step, got, tt.want)
			}
			lo, hi := tt.want*8/10, tt.want*12/10
			if got := Delay(step, base, ceiling, 0); got != lo {
				t.Errorf("Delay(%d, r=0) = %v, want %v (-20%%)", step, got, lo)
			}
			for i := range 1000 {
				r := float64(i) / 1000 // [0, 1)
				got := Delay(step, base, ceiling, r)
				if got < lo || got >= hi {
					t.Fatalf("Delay(%d, r=%v) = %v, outside [%v, %v)", step, r, got, lo, hi)
				}
			}
		})
	}
	// A small cap and base, as tests and impatient operators configure.
	if got := Delay(3, 50*time.Millisecond, 100*time.Millisecond, 0.5); got != 100*time.Millisecond {
		t.Errorf("Delay(3, 50ms base, 100ms cap) = %v, want the 100ms cap", got)
	}
}

// TestDelayInboxSchedule: the inbox's retries of a failing handler, with
// its defaults (100ms base, 5s cap); retry n waits at step n-1.
func TestDelayInboxSchedule(t *testing.T) {
	tests := []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		{0, 0.5, 100 * time.Millisecond},
		{1, 0.5, 100 * time.Millisecond},
		{2, 0.5, 200 * time.Millisecond},
		{4, 0.5, 800 * time.Millisecond},
		{7, 0.5, 5 * time.Second}, // capped
		{1000, 0.5, 5 * time.Second},
		{2, 0, 160 * time.Millisecond},
		{7, 1, 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("retry %d r %.1f", tt.retry, tt.r), func(t *testing.T) {
			if got := Delay(tt.retry-1, 100*time.Millisecond, 5*time.Second, tt.r); got != tt.want {
				t.Errorf("Delay = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDelayNeverOverflows(t *testing.T) {
	const ceiling = time.Duration(math.MaxInt64)
	if got := Delay(200, time.Second, ceiling, 0.5); got != ceiling {
		t.Errorf("Delay(200, 1s, max) = %v, want the ceiling", got)
	}
}
