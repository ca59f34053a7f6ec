package drill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Service is a process the supervisor keeps running.
type Service struct {
	// Name labels the service ("relay-1") and names its log files.
	Name string
	// Path is the binary.
	Path string
	// Args are the arguments after the program name; ArgsFor, when set,
	// replaces them per incarnation (1-based), e.g. to give each relay
	// incarnation its own id.
	Args    []string
	ArgsFor func(incarnation int) []string
	// Env is the complete environment of the process (nothing is inherited).
	Env []string
	// Failpoints is HERALD_FAILPOINTS for the first incarnation only; a
	// restarted process runs without it, as a supervisor would restart it.
	Failpoints string
	// Health is a URL that answers 2xx once the process is ready.
	Health string
}

// An incarnation that lives less than quickExit counts toward a crash
// loop; restarts of a crash loop back off up to maxRestartDelay.
const (
	quickExit       = 10 * time.Second
	maxRestartDelay = 30 * time.Second
)

// Exit is how one incarnation of a service ended.
type Exit struct {
	Service     string    `json:"service"`
	Incarnation int       `json:"incarnation"`
	Pid         int       `json:"pid"`
	At          time.Time `json:"at"`
	// How is "exit status N" or "killed by SIGNAL".
	How string `json:"how"`
	// Failpoint is true when the process died by SIGKILL after logging that
	// a failpoint fired.
	Failpoint bool `json:"failpoint"`
	// Requested is true when the supervisor stopped it (end of the drill).
	Requested bool `json:"requested"`
	// Clean is true for exit status 0.
	Clean bool   `json:"clean"`
	Log   string `json:"log"`
}

// Supervisor starts services, restarts any that exits (after the restart
// delay, doubled for each consecutive incarnation that lived under 10 s, at
// most 30 s; without failpoints), and stops them all at the end. Every process runs in
// its own process group and dies with the supervisor's process
// (PR_SET_PDEATHSIG), so none outlives a drill.
type Supervisor struct {
	logDir       string
	restartDelay time.Duration
	note         func(format string, args ...any)

	mu    sync.Mutex
	procs []*Proc
	exits []Exit
}

// NewSupervisor returns a supervisor writing one log file per incarnation
// into logDir; note receives its timeline entries.
func NewSupervisor(logDir string, restartDelay time.Duration, note func(format string, args ...any)) *Supervisor {
	return &Supervisor{logDir: logDir, restartDelay: restartDelay, note: note}
}

// Proc is a supervised service.
type Proc struct {
	sup *Supervisor
	svc Service

	mu          sync.Mutex
	incarnation int
	cmd         *exec.Cmd
	logPath     string
	done        chan struct{} // closed when the current incarnation exited
	startedAt   time.Time
	quickExits  int // consecutive incarnations that lived under quickExit
	stopping    bool
	changed     chan struct{} // closed and replaced at every start and exit
}

// Start starts the service's first incarnation and returns at once.
func (s *Supervisor) Start(svc Service) (*Proc, error) {
	p := &Proc{sup: s, svc: svc, changed: make(chan struct{})}
	if err := p.start(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return p, nil
}

// errStopping refuses a restart once Stop was called.
var errStopping = errors.New("stopping")

func (p *Proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return errStopping
	}
	p.incarnation++
	n := p.incarnation
	logPath := filepath.Join(p.sup.logDir, fmt.Sprintf("%s.%d.log", p.svc.Name, n))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.svc.Name, err)
	}
	args := p.svc.Args
	if p.svc.ArgsFor != nil {
		args = p.svc.ArgsFor(n)
	}
	cmd := exec.Command(p.svc.Path, args...)
	cmd.Env = append([]string(nil), p.svc.Env...)
	fp := ""
	if n == 1 {
		fp = p.svc.Failpoints
	}
	cmd.Env = append(cmd.Env, "HERALD_FAILPOINTS="+fp)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", p.svc.Name, err)
	}
	p.cmd, p.logPath, p.done, p.startedAt = cmd, logPath, make(chan struct{}), time.Now()
	p.signalChange()
	how := ""
	if fp != "" {
		how = " with HERALD_FAILPOINTS=" + fp
	}
	p.sup.note("%s#%d started (pid %d)%s", p.svc.Name, n, cmd.Process.Pid, how)
	go p.wait(cmd, logFile, n, p.done)
	return nil
}

// signalChange wakes everyone waiting for a start or an exit. Call with
// p.mu held.
func (p *Proc) signalChange() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proc) wait(cmd *exec.Cmd, logFile *os.File, n int, done chan struct{}) {
	cmd.Wait()
	logFile.Close()
	// A process the supervisor did not start on its own (a child it forked)
	// dies with its group.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	e := Exit{Service: p.svc.Name, Incarnation: n, Pid: cmd.Process.Pid, At: time.Now(), Requested: stopping, Log: p.logPath}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		e.How = fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
		e.Failpoint = ws.Signal() == syscall.SIGKILL && logMentionsFailpoint(p.logPath)
	default:
		e.How = fmt.Sprintf("exit status %d", ws.ExitStatus())
		e.Clean = ws.ExitStatus() == 0
	}
	// Recorded before anyone waiting for the exit is woken, so Exits()
	// already holds it when WaitExit returns.
	p.sup.mu.Lock()
	p.sup.exits = append(p.sup.exits, e)
	p.sup.mu.Unlock()

	p.mu.Lock()
	close(done)
	p.signalChange()
	if time.Since(p.startedAt) < quickExit {
		p.quickExits++
	} else {
		p.quickExits = 0
	}
	// A crash loop is restarted ever more slowly, as supervisors do.
	delay := min(p.sup.restartDelay<<min(max(p.quickExits-1, 0), 5), maxRestartDelay)
	p.mu.Unlock()

	if stopping {
		p.sup.note("%s#%d stopped (%s)", p.svc.Name, n, e.How)
		return
	}
	cause := ""
	if e.Failpoint {
		cause = " at its failpoint"
	}
	p.sup.note("%s#%d died%s (%s); restarting in %v without failpoints", p.svc.Name, n, cause, e.How, delay)
	for attempt := 1; ; attempt++ {
		time.Sleep(delay)
		err := p.start()
		if err == nil || errors.Is(err, errStopping) {
			return
		}
		p.sup.note("%s: restart attempt %d failed: %v", p.svc.Name, attempt, err)
	}
}

// logMentionsFailpoint reports whether the log says a failpoint fired
// (internal/failpoint writes "failpoint NAME: crash" before SIGKILL).
func logMentionsFailpoint(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), "failpoint ") && strings.Contains(string(b), ": crash")
}

// Name is the service's name.
func (p *Proc) Name() string { return p.svc.Name }

// Incarnation is the number of the current (or last) incarnation, from 1.
func (p *Proc) Incarnation() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.incarnation
}

// Running reports whether an incarnation is running.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// LogPath is the current incarnation's log file.
func (p *Proc) LogPath() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logPath
}

// WaitExit waits until incarnation n has exited.
func (p *Proc) WaitExit(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		cur, done, changed := p.incarnation, p.done, p.changed
		p.mu.Unlock()
		if cur > n {
			return nil
		}
		if cur == n {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitReady waits until incarnation n (or a later one) is running and its
// health URL answers 2xx.
func (p *Proc) WaitReady(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		cur, changed := p.incarnation, p.changed
		p.mu.Unlock()
		if cur >= n {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%s#%d did not start: %w", p.svc.Name, n, ctx.Err())
		}
	}
	if p.svc.Health == "" {
		return nil
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if p.Running() {
			resp, err := client.Get(p.svc.Health)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s#%d not ready (%s): %w; log: %s", p.svc.Name, p.Incarnation(), p.svc.Health, ctx.Err(), p.LogPath())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to the running incarnation; the supervisor restarts
// it like any process that died.
func (p *Proc) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// Stop ends supervision and stops the running incarnation: SIGTERM, then
// SIGKILL after timeout. It returns the incarnation's exit, or an error if
// it had to be killed.
func (p *Proc) Stop(timeout time.Duration) error {
	p.mu.Lock()
	p.stopping = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.svc.Name, timeout)
}

// StopAll stops every service at once and waits for them; it returns the
// services that had to be killed.
func (s *Supervisor) StopAll(timeout time.Duration) error {
	s.mu.Lock()
	procs := append([]*Proc(nil), s.procs...)
	s.mu.Unlock()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range procs {
		wg.Go(func() {
			if err := p.Stop(timeout); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Exits returns every exit so far, in order.
func (s *Supervisor) Exits() []Exit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exit(nil), s.exits...)
}
