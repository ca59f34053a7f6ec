package inbox

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// Observer receives the outcome of every record, for metrics. Methods are
// called from the partition goroutines, concurrently: they must be quick
// and safe for concurrent use. Embed NopObserver to implement only some.
type Observer interface {
	// Processed: the record's transaction committed; handlerLatency is the
	// handler's run time in its successful attempt.
	Processed(topic string, partition int32, handlerLatency time.Duration)
	// Duplicate: the inbox already held the record's event id; nothing was
	// done.
	Duplicate(topic string, partition int32)
	// DeadLettered: the record went to the dead-letter topic; class is an
	// envelope class (malformed, missing_id, unknown_type,
	// unsupported_version) or "handler".
	DeadLettered(topic string, partition int32, class string)
	// Retried: a transaction failed and is tried again; class is
	// RetryHandler, RetryTransient or RetryDatabase.
	Retried(topic string, partition int32, class string)
}

// NopObserver ignores everything.
type NopObserver struct{}

// Processed does nothing.
func (NopObserver) Processed(string, int32, time.Duration) {}

// Duplicate does nothing.
func (NopObserver) Duplicate(string, int32) {}

// DeadLettered does nothing.
func (NopObserver) DeadLettered(string, int32, string) {}

// Retried does nothing.
func (NopObserver) Retried(string, int32, string) {}

// Stats is a snapshot of a Consumer's counters since it was created.
type Stats struct {
	// Processed counts records whose transaction committed.
	Processed int64
	// Duplicates counts records the inbox dropped as already applied.
	Duplicates int64
	// DeadLettered counts dead-lettered records by class.
	DeadLettered map[string]int64
	// Retries counts retried transactions by class.
	Retries map[string]int64
	// HandlerCalls, HandlerTime and HandlerMax sum up the handler's
	// successful runs.
	HandlerCalls int64
	HandlerTime  time.Duration
	HandlerMax   time.Duration
	// Assigned lists the partitions this member works on now.
	Assigned map[string][]int32
}

// counters backs Stats.
type counters struct {
	processed    atomic.Int64
	duplicates   atomic.Int64
	handlerCalls atomic.Int64
	handlerNanos atomic.Int64
	handlerMax   atomic.Int64

	mu           sync.Mutex
	deadLettered map[string]int64
	retries      map[string]int64
}

func (c *counters) addProcessed(latency time.Duration) {
	c.processed.Add(1)
	c.handlerCalls.Add(1)
	c.handlerNanos.Add(int64(latency))
	for {
		cur := c.handlerMax.Load()
		if int64(latency) <= cur || c.handlerMax.CompareAndSwap(cur, int64(latency)) {
			return
		}
	}
}

func (c *counters) addDeadLettered(class string) {
	c.mu.Lock()
	if c.deadLettered == nil {
		c.deadLettered = map[string]int64{}
	}
	c.deadLettered[class]++
	c.mu.Unlock()
}

func (c *counters) addRetry(class string) {
	c.mu.Lock()
	if c.retries == nil {
		c.retries = map[string]int64{}
	}
	c.retries[class]++
	c.mu.Unlock()
}

func (c *counters) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{
		Processed:    c.processed.Load(),
		Duplicates:   c.duplicates.Load(),
		HandlerCalls: c.handlerCalls.Load(),
		HandlerTime:  time.Duration(c.handlerNanos.Load()),
		HandlerMax:   time.Duration(c.handlerMax.Load()),
		DeadLettered: maps.Clone(c.deadLettered),
		Retries:      maps.Clone(c.retries),
	}
	if s.DeadLettered == nil {
		s.DeadLettered = map[string]int64{}
	}
	if s.Retries == nil {
		s.Retries = map[string]int64{}
	}
	return s
}
