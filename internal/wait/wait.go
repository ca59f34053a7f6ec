// Package wait is how herald's tests wait for something to happen: poll a
// condition with a deadline, never sleep for a guessed while. It lives
// below the library so that the public conformance suite (store/storetest)
// and the test kit (testkit/testenv) share it.
package wait

import (
	"testing"
	"time"
)

// PollInterval is how often For looks again.
const PollInterval = 25 * time.Millisecond

// For calls cond every PollInterval until it reports done, and fails t
// once timeout has passed, with cond's last description of the state.
func For(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
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

// Until is For for a condition without a description.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	For(t, timeout, what, func() (bool, string) { return cond(), "" })
}
