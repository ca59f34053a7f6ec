package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// collector reads a peer's topic from its start, independently of the
// peer, and keeps each record's position, key, event and append time.
type collector struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	records  []record
	distinct map[eventKey]bool
	probes   int
	changed  chan struct{} // closed and replaced on every poll that added records
	lastNew  time.Time     // when the last new event arrived
}

func newCollector(brokers []string, topic string) (*collector, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{cl: cl, cancel: cancel, done: make(chan struct{}), distinct: map[eventKey]bool{},
		changed: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *collector) run(ctx context.Context) {
	defer close(c.done)
	for ctx.Err() == nil {
		fetches := c.cl.PollFetches(ctx)
		var batch []record
		fetches.EachRecord(func(r *kgo.Record) {
			agg, seq, _ := parseEvent(r.Value)
			batch = append(batch, record{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key),
				Agg: agg, Seq: seq, Append: r.Timestamp})
		})
		if len(batch) == 0 {
			continue
		}
		c.mu.Lock()
		for _, r := range batch {
			c.records = append(c.records, r)
			if r.Agg == probeAggregate {
				c.probes++
			} else if k := (eventKey{r.Agg, r.Seq}); r.Agg != "" && !c.distinct[k] {
				c.distinct[k] = true
				c.lastNew = time.Now()
			}
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// close stops reading.
func (c *collector) close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

// events is how many distinct events (probes aside) were read so far.
func (c *collector) events() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.distinct)
}

// snapshot is every record read so far.
func (c *collector) snapshot() []record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]record(nil), c.records...)
}

// waitEvents waits until n distinct events were read, or timeout passed,
// or abort returns an error (a peer's process exited); it returns when the
// n-th arrived (by the harness's clock) or the error.
func (c *collector) waitEvents(ctx context.Context, n int, timeout time.Duration, abort func() error) (time.Time, error) {
	return c.waitFor(ctx, func() bool { return len(c.distinct) >= n }, timeout, abort,
		func() string { return fmt.Sprintf("%d of %d events on the topic", len(c.distinct), n) })
}

// errWaitTimeout is a wait's timeout, as opposed to a stall or an abort.
var errWaitTimeout = errors.New("timed out")

// stallTimeout is how long waitCaughtUp waits for a new event before it
// concludes that the missing ones will not come.
const stallTimeout = 10 * time.Second

// waitCaughtUp waits until n distinct events were read, and gives up when
// none arrived for stallTimeout or timeout passed: a peer that lost events
// is reported without waiting out the whole timeout.
func (c *collector) waitCaughtUp(ctx context.Context, n int, timeout time.Duration, abort func() error) (time.Time, error) {
	c.mu.Lock()
	if c.lastNew.IsZero() {
		c.lastNew = time.Now()
	}
	c.mu.Unlock()
	stalled := func() error {
		if err := abort(); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if since := time.Since(c.lastNew); since > stallTimeout {
			return fmt.Errorf("%d of %d events on the topic, no new one for %v", len(c.distinct), n, since.Round(time.Second))
		}
		return nil
	}
	return c.waitEvents(ctx, n, timeout, stalled)
}

// waitProbes waits until at least n probe records were read.
func (c *collector) waitProbes(ctx context.Context, n int, timeout time.Duration, abort func() error) error {
	_, err := c.waitFor(ctx, func() bool { return c.probes >= n }, timeout, abort,
		func() string { return "the readiness probe is not on the topic" })
	return err
}

func (c *collector) waitFor(ctx context.Context, cond func() bool, timeout time.Duration, abort func() error, what func() string) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		c.mu.Lock()
		ok, changed := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return time.Now(), nil
		}
		select {
		case <-changed:
		case <-check.C:
			if abort != nil {
				if err := abort(); err != nil {
					return time.Time{}, err
				}
			}
		case <-deadline.C:
			c.mu.Lock()
			defer c.mu.Unlock()
			return time.Time{}, fmt.Errorf("%w after %v: %s", errWaitTimeout, timeout, what())
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}
