package wait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls For on a recorder in a goroutine of its own and returns what
// it failed with ("" when it returned).
func run(timeout time.Duration, cond func() (bool, string)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		For(r, timeout, "the thing", cond)
	}()
	<-done
	return r.msg
}

func TestForReturnsOnceDone(t *testing.T) {
	calls := 0
	if msg := run(10*time.Second, func() (bool, string) { calls++; return calls == 3, "" }); msg != "" {
		t.Fatalf("failed with %q, want a return at the third look", msg)
	}
	if calls != 3 {
		t.Errorf("looked %d times, want 3", calls)
	}
}

func TestForFailsAfterTheTimeoutWithTheState(t *testing.T) {
	msg := run(3*PollInterval, func() (bool, string) { return false, "still 2 of 3" })
	if !strings.HasPrefix(msg, "the thing: not reached within") || !strings.HasSuffix(msg, ": still 2 of 3") {
		t.Errorf("failed with %q, want what, the timeout and the last state", msg)
	}
}
