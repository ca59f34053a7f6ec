package backoff

import "time"

// Jitter is the spread of a delay: ±20 %, so retries of records that failed
// together do not come back together.
const Jitter = 0.2

// Delay is the wait at step (0 for the first retry): base·2^step, capped
// at ceiling, then spread by ±Jitter according to r in [0, 1] (0.5 spreads
// nothing, 0 takes 20 % off, 1 adds 20 %). A negative step counts as 0. It
// is a pure function, so tests need no clock and no random source.
func Delay(step int, base, ceiling time.Duration, r float64) time.Duration {
	d := base
	for i := 0; i < step && d < ceiling; i++ {
		if d > ceiling/2 {
			d = ceiling // doubling would pass the ceiling (or overflow)
			break
		}
		d *= 2
	}
	d = min(d, ceiling)
	return d + time.Duration((2*r-1)*Jitter*float64(d))
}
