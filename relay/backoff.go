package relay

import "time"

// jitterFraction spreads retries of a failed batch by ±20%.
const jitterFraction = 0.2

// Backoff is the delay before attempt number attempts+1 of an event whose
// attempts-th attempt failed: base·2^attempts (the specification's
// min(300 s, 2^attempts s) with the defaults), capped, then spread by ±20%
// according to r in [0, 1). It is a pure function so tests need no clock.
func Backoff(attempts uint32, base, cap time.Duration, r float64) time.Duration {
	d := base
	for i := uint32(0); i < attempts && d < cap; i++ {
		d *= 2
	}
	d = min(d, cap)
	jitter := time.Duration((2*r - 1) * jitterFraction * float64(d))
	return d + jitter
}
