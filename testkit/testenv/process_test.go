package testenv

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessExitStatusSignalsAndOutput(t *testing.T) {
	p := StartProcess(t, ProcessOptions{Name: "exit3", Path: "/bin/sh", Args: []string{"-c", "echo $GREETING; echo oops >&2; exit 3"},
		Env: []string{"GREETING=hello"}})
	if exit := p.Wait(t, 10*time.Second); exit.Code != 3 || exit.Signal != 0 {
		t.Errorf("exit = %v, want exit status 3", exit)
	}
	if log := p.Log(); log != "hello\noops\n" {
		t.Errorf("output %q, want stdout and stderr in order", log)
	}

	t.Setenv("HERALD_PROBE", "leaked")
	p = StartProcess(t, ProcessOptions{Name: "env", Path: "/bin/sh", Args: []string{"-c", "echo probe=$HERALD_PROBE"},
		DropEnv: []string{"HERALD_"}})
	p.Wait(t, 10*time.Second)
	if !strings.Contains(p.Log(), "probe=\n") {
		t.Errorf("a dropped variable was inherited: %q", p.Log())
	}

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		p = StartProcess(t, ProcessOptions{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "echo ready; exec sleep 30"}})
		p.WaitForLog(t, "ready", 10*time.Second)
		if sig == syscall.SIGKILL {
			p.Kill(t)
		} else if err := p.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if exit := p.Wait(t, 10*time.Second); exit.Signal != sig || exit.Code != -1 {
			t.Errorf("exit = %v, want killed by %v", exit, sig)
		}
	}
}
