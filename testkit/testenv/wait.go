package testenv

import (
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/wait"
)

// WaitFor calls cond every wait.PollInterval until it reports done, and
// fails t once timeout has passed, with cond's last description of the
// state (wait.For). It is the one way tests here wait for something to
// happen.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	wait.For(t, timeout, what, cond)
}

// Eventually is WaitFor for a condition without a description.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, timeout, what, cond)
}
