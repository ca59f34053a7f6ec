package testenv

import (
	"testing"
	"time"
)

// pollInterval is how often WaitFor looks again.
const pollInterval = 25 * time.Millisecond

// WaitFor calls cond every pollInterval until it reports done, and fails t
// once timeout has passed, with cond's last description of the state. It
// is the one way tests here wait for something to happen.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
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

// Eventually is WaitFor for a condition without a description.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, timeout, what, func() (bool, string) { return cond(), "" })
}
