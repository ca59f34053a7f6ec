package storetest

import (
	"testing"
	"time"
)

// pollEvery is how often waitFor looks again.
const pollEvery = 25 * time.Millisecond

// waitFor calls cond every pollEvery until it reports done, and fails t
// once timeout has passed, with cond's last description of the state.
// The suite keeps its own waits so that a dialect outside this module can
// run it with nothing of herald's test kit.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		done, state := cond()
		if done {
			return
		}
		select {
		case <-deadline.C:
			if done, state = cond(); done {
				return
			}
			if state != "" {
				state = ": " + state
			}
			t.Fatalf("%s: not reached within %v%s", what, timeout, state)
		case <-tick.C:
		}
	}
}

// eventually is waitFor for a condition without a description.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitFor(t, timeout, what, func() (bool, string) { return cond(), "" })
}
