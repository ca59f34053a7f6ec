// Package backoff is the one retry schedule of herald: the relay waits by it
// before publishing a failed event again, the inbox before running a failed
// handler again, and the example dispatcher before calling the warehouse
// again.
//
//	wait := backoff.Delay(failures-1, time.Second, 5*time.Minute, rand.Float64())
//
// Start at Delay; Jitter is the spread it draws from.
package backoff
