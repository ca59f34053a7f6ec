package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The failpoints compiled into herald's binaries.
const (
	// OrdersAfterCommit: the orders API committed an order, before it answers.
	OrdersAfterCommit = "orders.after_commit"
	// RelayAfterClaim: a relay committed a claim, before any Kafka I/O.
	RelayAfterClaim = "relay.after_claim"
	// RelayBeforePublish: a relay is about to produce a claimed batch.
	RelayBeforePublish = "relay.before_publish"
	// RelayAfterAckBeforeMark: Kafka acknowledged a batch, before the relay
	// marks it published.
	RelayAfterAckBeforeMark = "relay.after_ack_before_mark"
	// RelaySettle: a relay is about to record a batch's outcome (its marks,
	// failures, holds and, for a stream batch, the checkpoint).
	RelaySettle = "relay.settle"
	// StreamAfterLead: a relay became the stream's leader, before it opens
	// the stream (or sweeps).
	StreamAfterLead = "stream.after_lead"
	// StreamAfterRead: the stream's leader planned a batch it read, before
	// any Kafka I/O.
	StreamAfterRead = "stream.after_read"
	// StreamAfterAckBeforeCheckpoint: Kafka acknowledged a stream batch,
	// before the checkpoint that publishes it.
	StreamAfterAckBeforeCheckpoint = "stream.after_ack_before_checkpoint"
	// StreamCheckpoint: a stream's leader is about to write the checkpoint
	// that publishes events Kafka acknowledged (a batch with failures
	// writes it in its settlement: RelaySettle).
	StreamCheckpoint = "stream.checkpoint"
	// ConsumerAfterCommitBeforeOffset: a consumer committed its database
	// transaction, before it commits the Kafka offset.
	ConsumerAfterCommitBeforeOffset = "consumer.after_commit_before_offset"
	// ConsumerAfterCommitBeforeCall: a consumer committed its database
	// transaction, before it calls the external service.
	ConsumerAfterCommitBeforeCall = "consumer.after_commit_before_call"
)

// Known lists every failpoint, so a typo in HERALD_FAILPOINTS is an error.
var Known = []string{
	OrdersAfterCommit, RelayAfterClaim, RelayBeforePublish, RelayAfterAckBeforeMark, RelaySettle,
	StreamAfterLead, StreamAfterRead, StreamAfterAckBeforeCheckpoint, StreamCheckpoint,
	ConsumerAfterCommitBeforeOffset, ConsumerAfterCommitBeforeCall,
}

// EnvVar is the environment variable that switches failpoints on.
const EnvVar = "HERALD_FAILPOINTS"

type action struct {
	crashAt int64 // crash at this hit (0: never)
	failAt  int64 // Err fails at this hit (0: never)
	sleep   time.Duration
	hits    atomic.Int64
}

var (
	enabled atomic.Bool
	mu      sync.RWMutex
	points  map[string]*action
)

// EnableFromEnv switches on the failpoints HERALD_FAILPOINTS names; unset
// or empty leaves them off. Only a binary's main calls it, before anything
// else: a malformed value is an error naming the variable, which the binary
// reports as a usage error (exit 2).
func EnableFromEnv() error {
	if err := Set(os.Getenv(EnvVar)); err != nil {
		return fmt.Errorf("%s: %w", EnvVar, err)
	}
	return nil
}

// Set replaces the active failpoints with spec (the HERALD_FAILPOINTS
// syntax); an empty spec switches them all off.
func Set(spec string) error {
	parsed, err := parse(spec)
	if err != nil {
		return err
	}
	mu.Lock()
	points = parsed
	mu.Unlock()
	enabled.Store(len(parsed) > 0)
	return nil
}

// parse reads a HERALD_FAILPOINTS value.
func parse(spec string) (map[string]*action, error) {
	out := map[string]*action{}
	for _, item := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || r == ',' }) {
		name, act, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=action", item)
		}
		if !known(name) {
			return nil, fmt.Errorf("unknown failpoint %q (known: %s)", name, strings.Join(Known, ", "))
		}
		a := &action{}
		switch {
		case act == "crash":
			a.crashAt = 1
		case strings.HasPrefix(act, "crash@"):
			n, err := strconv.ParseInt(strings.TrimPrefix(act, "crash@"), 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: %q: want crash@N with N >= 1", name, act)
			}
			a.crashAt = n
		case strings.HasPrefix(act, "fail@"):
			n, err := strconv.ParseInt(strings.TrimPrefix(act, "fail@"), 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: %q: want fail@N with N >= 1", name, act)
			}
			a.failAt = n
		case strings.HasPrefix(act, "sleep(") && strings.HasSuffix(act, ")"):
			d, err := time.ParseDuration(act[len("sleep(") : len(act)-1])
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%s: %q: want sleep(DURATION)", name, act)
			}
			a.sleep = d
		default:
			return nil, fmt.Errorf("%s: unknown action %q (want crash, crash@N, fail@N or sleep(D))", name, act)
		}
		out[name] = a
	}
	return out, nil
}

// Hit marks that the process reached the failpoint name and performs its
// action, if the process switched one on (EnableFromEnv or Set); otherwise
// it does nothing.
func Hit(name string) { HitWithEvents(name, nil) }

// crashEvents introduces, on a crash line, the events the process was
// working on.
const crashEvents = "; events in hand: "

// HitWithEvents is Hit for a point where the process works on events:
// when the action crashes the process, the crash line also lists their
// ids (events is called only then), so a drill can tell which events the
// dead process left behind. EventsAtCrash reads them back.
func HitWithEvents(name string, events func() []string) { hit(name, events) }

// ErrInjected is the error Err returns at a fail@N hit.
var ErrInjected = errors.New("failpoint: injected failure")

// Err is Hit for a point that can fail: at the hit a fail@N action names,
// it returns an error wrapping ErrInjected; otherwise nil.
func Err(name string) error {
	if a, n := hit(name, nil); a != nil && a.failAt > 0 && n == a.failAt {
		return fmt.Errorf("%s at hit %d: %w", name, n, ErrInjected)
	}
	return nil
}

// hit counts a hit of name and performs its sleep or crash; it returns the
// action (nil when none is set) and the hit's number.
func hit(name string, events func() []string) (*action, int64) {
	if !enabled.Load() {
		return nil, 0
	}
	mu.RLock()
	a := points[name]
	mu.RUnlock()
	if a == nil {
		return nil, 0
	}
	n := a.hits.Add(1)
	if a.sleep > 0 {
		time.Sleep(a.sleep)
	}
	if a.crashAt > 0 && n == a.crashAt {
		detail := ""
		if events != nil {
			detail = crashEvents + strings.Join(events(), ",")
		}
		fmt.Fprintf(os.Stderr, "herald: failpoint %s: crash (SIGKILL) at hit %d%s\n", name, n, detail)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns; SIGKILL cannot be caught
	}
	return a, n
}

// EventsAtCrash returns the ids a process's log lists on its failpoint
// crash line (see HitWithEvents); nil when there is none.
func EventsAtCrash(log string) []string {
	for _, line := range strings.Split(log, "\n") {
		if _, list, ok := strings.Cut(line, crashEvents); ok && strings.HasPrefix(line, "herald: failpoint ") {
			if list == "" {
				return []string{}
			}
			return strings.Split(list, ",")
		}
	}
	return nil
}

func known(name string) bool {
	for _, k := range Known {
		if k == name {
			return true
		}
	}
	return false
}
