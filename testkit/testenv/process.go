package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ProcessOptions say what StartProcess runs.
type ProcessOptions struct {
	// Name labels the process in logs and names its log file. Defaults to
	// the binary's base name.
	Name string
	// Path is the binary. Required.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is added to the test's own environment (later entries win).
	Env []string
	// DropEnv lists prefixes of the test's environment variables the
	// process must not inherit (e.g. "HERALD_").
	DropEnv []string
	// Dir is the working directory. Defaults to the test's.
	Dir string
}

// Process is a child process started by a test. It is SIGKILLed and reaped
// when the test ends, and the tail of its combined output is logged if the
// test failed.
type Process struct {
	// Name labels the process.
	Name string
	// LogPath holds the process's stdout and stderr.
	LogPath string

	cmd   *exec.Cmd
	done  chan struct{}
	state *os.ProcessState
	err   error // from Wait, when the process could not be waited for
}

// StartProcess starts opts.Path and returns at once. The process runs in its
// own process group, so signals sent to it do not reach the test.
func StartProcess(t testing.TB, opts ProcessOptions) *Process {
	t.Helper()
	if opts.Name == "" {
		opts.Name = filepath.Base(opts.Path)
	}
	logFile, err := os.CreateTemp(t.TempDir(), sanitize(opts.Name)+"-*.log")
	if err != nil {
		t.Fatalf("process %s: log file: %v", opts.Name, err)
	}
	cmd := exec.Command(opts.Path, opts.Args...)
	for _, kv := range os.Environ() {
		if !hasAnyPrefix(kv, opts.DropEnv) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.Dir = opts.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", opts.Name, err)
	}
	p := &Process{Name: opts.Name, LogPath: logFile.Name(), cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.state = cmd.ProcessState
		if p.state == nil {
			p.err = err
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			// The whole group: a child the process started dies with it.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			out := p.Log()
			if n := strings.Count(out, "\n"); n > 40 {
				out = fmt.Sprintf("%s\n... (%d lines) ...\n%s", p.Head(10), n-40, p.Tail(30))
			}
			t.Logf("--- output of %s (pid %d, %s) ---\n%s", p.Name, p.Pid(), p.LogPath, out)
		}
	})
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process (not to its group). A process that has
// already exited is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// Exit describes how a process ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal is the signal that ended the process, or 0.
	Signal syscall.Signal
}

func (e Exit) String() string {
	if e.Signal != 0 {
		return "killed by " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Wait waits up to timeout for the process to exit and says how it ended;
// it fails t if the process is still running then.
func (p *Process) Wait(t testing.TB, timeout time.Duration) Exit {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s (pid %d) still running after %v; log tail:\n%s", p.Name, p.Pid(), timeout, p.Tail(20))
	}
	return p.Exit()
}

// Exit says how the process ended; call it after Done is closed.
func (p *Process) Exit() Exit {
	if p.state == nil {
		return Exit{Code: -1}
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: p.state.ExitCode()}
}

// Log returns everything the process wrote so far.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.LogPath, err)
	}
	return string(b)
}

// Head returns the first n lines the process wrote.
func (p *Process) Head(n int) string {
	lines := strings.SplitN(p.Log(), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// Tail returns the last n lines the process wrote.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitForLog polls the process's output until it contains substr, and fails
// t after timeout or if the process exits first without writing it.
func (p *Process) WaitForLog(t testing.TB, substr string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%s logging %q", p.Name, substr), func() (bool, string) {
		exited := p.Exited()
		if strings.Contains(p.Log(), substr) {
			return true, ""
		}
		if exited {
			t.Fatalf("%s exited (%v) without logging %q; log tail:\n%s", p.Name, p.Exit(), substr, p.Tail(20))
		}
		return false, "log tail:\n" + p.Tail(20)
	})
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}

// built holds the binaries this test process built, in one directory,
// each under its package's base name (herald, orders, inventory, ...).
var built struct {
	mu   sync.Mutex
	dir  string
	path map[string]string // package -> binary
}

// Binary builds the main package pkg ("./cmd/herald",
// "./examples/orders"; relative to the repository root, also inside a
// nested module such as ./cmd/herald/internal/drill/services) once per test
// process and returns the binary's path. Binaries built by one process share
// a directory, as `make build` puts them into bin/. Call RemoveBuilt from
// TestMain to delete them afterwards.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	root := RepoRoot(t)
	built.mu.Lock()
	defer built.mu.Unlock()
	if path, ok := built.path[pkg]; ok {
		return path
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "herald-testbin-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.path = dir, map[string]string{}
	}
	path := filepath.Join(built.dir, filepath.Base(pkg))
	for _, other := range built.path {
		if other == path { // two packages of one name (examples/orders and the drills' orders)
			sub := filepath.Join(built.dir, sanitize(pkg))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(sub, filepath.Base(pkg))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, rel := moduleOf(root, pkg)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, rel)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built.path[pkg] = path
	return path
}

// moduleOf returns the directory of the module that holds pkg (relative
// to root): root itself, or a nested module such as
// cmd/herald/internal/drill/services, which `go build` must run inside;
// and pkg relative to that directory.
func moduleOf(root, pkg string) (dir, rel string) {
	for d := filepath.Join(root, pkg); d != root && strings.HasPrefix(d, root); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			r, err := filepath.Rel(d, filepath.Join(root, pkg))
			if err != nil {
				break
			}
			return d, "./" + filepath.ToSlash(r)
		}
	}
	return root, pkg
}

// HeraldBinary is Binary(t, "./cmd/herald").
func HeraldBinary(t testing.TB) string {
	t.Helper()
	return Binary(t, "./cmd/herald")
}

// RemoveBuilt deletes the binaries Binary built.
func RemoveBuilt() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
		built.dir, built.path = "", nil
	}
}

// RelayOptions configure a `herald relay` process; empty fields are left to
// the relay's defaults. HERALD_* variables of the test's own environment are
// not inherited: the process sees only the ones set here.
type RelayOptions struct {
	// Name labels the process; it is also the relay id unless ID is set.
	Name string
	// ID is HERALD_RELAY_ID. Defaults to Name.
	ID string
	// DSN is HERALD_DATABASE_URL: a MariaDB DSN or a PostgreSQL URL.
	// Required.
	DSN string
	// Brokers is HERALD_KAFKA_BROKERS. Required.
	Brokers []string
	// Topics is HERALD_TOPICS: aggregate_type=topic entries.
	Topics map[string]string
	// Lease is HERALD_LEASE.
	Lease time.Duration
	// BatchSize is HERALD_BATCH_SIZE.
	BatchSize int
	// Failpoints is HERALD_FAILPOINTS, e.g. "relay.after_claim=crash@2".
	Failpoints string
	// Env holds further NAME=value entries (HERALD_BACKOFF_CAP=5s, ...).
	Env []string
	// Args are further command-line arguments.
	Args []string
}

// StartRelay starts `herald relay` with opts; its metrics listener takes a
// free port.
func StartRelay(t testing.TB, opts RelayOptions) *Process {
	t.Helper()
	if opts.ID == "" {
		opts.ID = opts.Name
	}
	env := []string{
		"HERALD_DATABASE_URL=" + opts.DSN,
		"HERALD_KAFKA_BROKERS=" + strings.Join(opts.Brokers, ","),
		"HERALD_RELAY_ID=" + opts.ID,
		"HERALD_METRICS_ADDR=127.0.0.1:0",
		"HERALD_FAILPOINTS=" + opts.Failpoints,
	}
	if len(opts.Topics) > 0 {
		var routes []string
		for typ, topic := range opts.Topics {
			routes = append(routes, typ+"="+topic)
		}
		env = append(env, "HERALD_TOPICS="+strings.Join(routes, ","))
	}
	if opts.Lease > 0 {
		env = append(env, "HERALD_LEASE="+opts.Lease.String())
	}
	if opts.BatchSize > 0 {
		env = append(env, fmt.Sprintf("HERALD_BATCH_SIZE=%d", opts.BatchSize))
	}
	env = append(env, opts.Env...)
	return StartProcess(t, ProcessOptions{
		Name: opts.Name, Path: HeraldBinary(t), Args: append([]string{"relay"}, opts.Args...),
		Env: env, DropEnv: []string{"HERALD_"},
	})
}
