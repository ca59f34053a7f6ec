package failpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := []string{"", "relay.after_claim=crash", "relay.after_claim=crash@3; orders.after_commit=sleep(10ms)", "relay.settle=fail@2"}
	for _, s := range good {
		if _, err := parse(s); err != nil {
			t.Errorf("parse(%q): %v", s, err)
		}
	}
	bad := []string{"relay.after_claim", "no.such.point=crash", "relay.after_claim=crash@0",
		"relay.after_claim=explode", "relay.after_claim=sleep(soon)", "relay.settle=fail@0", "relay.settle=fail"}
	for _, s := range bad {
		if _, err := parse(s); err == nil {
			t.Errorf("parse(%q) accepted a bad spec", s)
		}
	}
}

func TestSleep(t *testing.T) {
	t.Cleanup(func() { Set("") })
	if err := Set("relay.before_publish=sleep(50ms)"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	Hit(RelayBeforePublish)
	Hit(RelayAfterClaim) // not set: no effect
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("sleep failpoint slept %v, want >= 50ms", d)
	}
}

// TestFailReturnsAnErrorAtItsHit: fail@2 makes the second Err of the
// point return ErrInjected, and only that one.
func TestFailReturnsAnErrorAtItsHit(t *testing.T) {
	t.Cleanup(func() { Set("") })
	if err := Set("relay.settle=fail@2"); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for range 3 {
		err := Err(RelaySettle)
		if err != nil && !errors.Is(err, ErrInjected) {
			t.Fatalf("Err: %v, want ErrInjected", err)
		}
		got = append(got, err != nil)
	}
	if fmt.Sprint(got) != "[false true false]" {
		t.Errorf("Err failed at hits %v, want only the second", got)
	}
	if err := Err(RelayAfterClaim); err != nil {
		t.Errorf("Err of a point not set: %v", err)
	}
}

// TestCrashKillsTheProcess runs this test binary as a child that hits a
// crash failpoint on its second hit, and checks the child died of SIGKILL
// after the first hit and before the line that follows the second.
func TestCrashKillsTheProcess(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		if err := EnableFromEnv(); err != nil {
			os.Stdout.WriteString(err.Error())
			os.Exit(2)
		}
		Hit(RelayAfterClaim)
		os.Stdout.WriteString("survived hit 1\n")
		Hit(RelayAfterClaim)
		os.Stdout.WriteString("survived hit 2\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKillsTheProcess$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", EnvVar+"="+RelayAfterClaim+"=crash@2")
	out, err := cmd.Output()
	status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v (%v), want death by SIGKILL", err, cmd.ProcessState)
	}
	if !strings.Contains(string(out), "survived hit 1") || strings.Contains(string(out), "survived hit 2") {
		t.Errorf("child output %q: want a crash exactly at the second hit", out)
	}
}

func TestEnableFromEnv(t *testing.T) {
	t.Cleanup(func() { Set("") })
	tests := []struct {
		name, value string
		wantErr     []string // substrings; nil: valid
		enabled     bool
	}{
		{"unset or empty", "", nil, false},
		{"valid", "relay.before_publish=sleep(1ms)", nil, true},
		{"unknown failpoint", "relay.nowhere=crash", []string{EnvVar, "relay.nowhere"}, false},
		{"bad action", "relay.after_claim=explode", []string{EnvVar, "explode"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Set("")
			t.Setenv(EnvVar, tt.value)
			err := EnableFromEnv()
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("EnableFromEnv() = %v, want an error naming %q", err, want)
				}
			}
			if tt.wantErr == nil && err != nil {
				t.Errorf("EnableFromEnv() = %v", err)
			}
			if enabled.Load() != tt.enabled {
				t.Errorf("failpoints enabled = %v, want %v", enabled.Load(), tt.enabled)
			}
		})
	}
}

func TestEventsAtCrash(t *testing.T) {
	log := `{"level":"INFO","msg":"relay started"}
herald: failpoint relay.after_claim: crash (SIGKILL) at hit 3; events in hand: id-1,id-2,id-3
`
	if got := EventsAtCrash(log); strings.Join(got, " ") != "id-1 id-2 id-3" {
		t.Errorf("EventsAtCrash = %v, want the three ids", got)
	}
	if got := EventsAtCrash(`{"msg":"events in hand: id-9"}`); got != nil {
		t.Errorf("a log line that is not a crash line gave %v", got)
	}
	if got := EventsAtCrash("herald: failpoint relay.after_claim: crash (SIGKILL) at hit 1; events in hand: \n"); got == nil || len(got) != 0 {
		t.Errorf("an empty batch gave %#v, want an empty list", got)
	}
}
