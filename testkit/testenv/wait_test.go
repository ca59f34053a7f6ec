package testenv

import (
	"testing"
	"time"
)

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	start := time.Now()
	WaitFor(t, 5*time.Second, "third call", func() (bool, string) {
		calls++
		return calls == 3, ""
	})
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v for three polls", d)
	}
}

// recorder captures Fatalf without stopping the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func TestWaitForFailsAfterTheTimeout(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		WaitFor(r, 60*time.Millisecond, "never", func() (bool, string) { return false, "still not" })
	}()
	if r.failed == "" {
		t.Fatal("WaitFor returned although the condition never held")
	}
}
