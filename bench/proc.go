package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/herald-outbox/herald/testkit/localstack"
)

// process is a relay process the harness started: a herald relay, the
// reference loop or the Watermill forwarder (this binary re-executed), or
// Debezium's JVM.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the exit, once done is closed
}

// started is every process the harness started and has not yet seen exit,
// so an interrupt or a failure can stop them all (by pid, each in its own
// process group).
var started = struct {
	sync.Mutex
	procs map[*process]bool
}{procs: map[*process]bool{}}

// startProcess runs argv with env added to the harness's environment, its
// output in logDir/<name>.log, in a process group of its own.
func startProcess(name, logDir string, env []string, argv ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	started.Lock()
	started.procs[p] = true
	started.Unlock()
	go func() {
		p.err = cmd.Wait()
		f.Close()
		started.Lock()
		delete(started.procs, p)
		started.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process's group and waits up to grace for the
// exit, then sends SIGKILL. It returns the exit error of a process that did
// not stop cleanly.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return p.exitError()
	}
	syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitError()
	case <-time.After(grace):
		syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.name, grace)
	}
}

// exitError is the exit of a process that has exited: nil for status 0 or
// death by the SIGTERM the harness sent (the JVM exits 143 on it).
func (p *process) exitError() error {
	var ee *exec.ExitError
	if p.err == nil || !errors.As(p.err, &ee) {
		return p.err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok &&
		((ws.Signaled() && ws.Signal() == syscall.SIGTERM) || ws.ExitStatus() == 143) {
		return nil
	}
	return fmt.Errorf("%s: %v", p.name, p.err)
}

// tail is the last n lines of the process's log, for error messages.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// killAll stops every process still running, each by its pid.
func killAll() {
	started.Lock()
	procs := make([]*process, 0, len(started.procs))
	for p := range started.procs {
		procs = append(procs, p)
	}
	started.Unlock()
	for _, p := range procs {
		p.stop(10 * time.Second)
	}
}

// procUsage is a live process's CPU seconds (utime + stime) and its peak
// resident set (VmHWM), from /proc.
func procUsage(pid int) (cpu float64, hwm int64, err error) {
	spent, err := localstack.ProcessCPU(strconv.Itoa(pid))
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("VmHWM of %d: %w", pid, err)
			}
			hwm = kb * 1024
		}
	}
	return spent.Seconds(), hwm, nil
}

// usageOf sums the usage of procs, each read while it still runs.
func usageOf(procs []*process) (Usage, error) {
	var u Usage
	for _, p := range procs {
		cpu, hwm, err := procUsage(p.pid())
		if err != nil {
			return Usage{}, fmt.Errorf("%s: %w (exited: %v)", p.name, err, p.exited())
		}
		u.CPUSeconds += cpu
		u.PeakRSSBytes += hwm
	}
	return u, nil
}

// usageSince is procs' usage since u0 was read: the CPU seconds between,
// the peak RSS so far.
func usageSince(u0 Usage, procs []*process) (Usage, error) {
	u1, err := usageOf(procs)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPUSeconds: u1.CPUSeconds - u0.CPUSeconds, PeakRSSBytes: u1.PeakRSSBytes}, nil
}
