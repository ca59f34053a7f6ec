package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"
)

// harness runs the measurements of one run.
type harness struct {
	cfg     Config
	st      *stack
	self    string // this binary, re-executed as the reference loop and the forwarder
	workDir string // logs and Debezium's state
	// templates are the databases holding each table shape's backlog.
	templates map[string]string
	serverID  atomic.Int64
}

// nextServerID is a binlog replica id no other reader of this run uses.
func (h *harness) nextServerID() int {
	return int(h.serverID.Add(1))
}

// catchUpWait bounds the wait, after the steady writers stop, for the
// events still on their way: a peer that cannot keep up with the rate
// would otherwise be waited for as long as its backlog takes.
const catchUpWait = 20 * time.Second

// deliveryWriters share the steady rate: one transaction of 10 events
// takes longer than the 10 ms one writer would have at 1,000 events/s.
const deliveryWriters = 4

// readyTimeout bounds a peer's start, up to its first probe on the topic.
const readyTimeout = 3 * time.Minute

// setup is one measurement's database, topic, reader of the topic and
// writer; close removes them.
type setup struct {
	env peerEnv
	// newWriter opens a writer of the peer's table shape on the database;
	// writer is the one the readiness probes use.
	newWriter func() (writer, error)
	writer    writer
	collector *collector
	probes    int
	h         *harness
	db        *sql.DB
}

func (h *harness) newSetup(ctx context.Context, p peer, kind string, rep int) (*setup, error) {
	name, db, err := h.st.newDatabase(ctx, p.table == heraldTable)
	if err != nil {
		return nil, err
	}
	s := &setup{h: h, db: db}
	s.env = peerEnv{tag: fmt.Sprintf("rep%d-%s-%s", rep, kind, p.name), database: name, dsn: h.cfg.dsn(name)}
	if p.table == watermillTable {
		if err := createWatermillTables(ctx, db); err != nil {
			s.close()
			return nil, err
		}
	}
	if s.env.topic, err = h.st.newTopic(ctx, p.name); err != nil {
		s.close()
		return nil, err
	}
	s.env.stateDir = filepath.Join(h.workDir, s.env.tag+"-state")
	if err := os.MkdirAll(s.env.stateDir, 0o755); err != nil {
		s.close()
		return nil, err
	}
	if s.collector, err = newCollector(h.cfg.Brokers, s.env.topic); err != nil {
		s.close()
		return nil, err
	}
	s.newWriter = func() (writer, error) {
		if p.table == heraldTable {
			return newHeraldWriter(ctx, s.env.dsn)
		}
		return newWatermillWriter(ctx, s.env.dsn, s.env.topic)
	}
	if s.writer, err = s.newWriter(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *setup) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.collector != nil {
		s.collector.close()
	}
	if s.writer != nil {
		s.writer.close()
	}
	s.db.Close()
	if s.env.topic != "" {
		s.h.st.deleteTopic(ctx, s.env.topic)
	}
	s.h.st.dropDatabase(ctx, s.env.database)
	os.RemoveAll(s.env.stateDir)
}

// ready writes a probe event every two seconds until one is on the topic:
// "ready" means the same for every peer, the first event written after its
// start has reached Kafka.
func (s *setup) ready(ctx context.Context, procs []*process) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		s.probes++
		probe := benchEvent{Agg: probeAggregate, Seq: int64(s.probes), Payload: payload(probeAggregate, int64(s.probes), 200, rand.New(rand.NewPCG(0, 0)))}
		if err := s.writer.write(ctx, []benchEvent{probe}); err != nil {
			return fmt.Errorf("write the readiness probe: %w", err)
		}
		err := s.collector.waitProbes(ctx, 1, 2*time.Second, func() error { return exitedEarly(procs) })
		if err == nil {
			return nil
		}
		if exited := exitedEarly(procs); exited != nil {
			return exited
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v (no probe on the topic); the log of %s ends:\n%s",
				readyTimeout, procs[0].name, procs[0].tail(15))
		}
	}
}

// start launches p's processes and waits until they are ready; on failure
// it stops what it started.
func (h *harness) start(ctx context.Context, p peer, s *setup) ([]*process, error) {
	procs, err := p.start(ctx, h, s.env)
	if err != nil {
		stopAll(procs)
		return nil, err
	}
	if err := s.ready(ctx, procs); err != nil {
		stopAll(procs)
		return nil, err
	}
	return procs, nil
}

// drain measures p draining the backlog.
func (h *harness) drain(ctx context.Context, p peer, rep int) (out DrainSample, err error) {
	out = DrainSample{Rep: rep, Events: h.cfg.Events, Database: DatabaseCost{-1, -1}}
	s, err := h.newSetup(ctx, p, "drain", rep)
	if err != nil {
		return out, err
	}
	defer s.close()
	if p.resumes {
		// Established first (a checkpoint, saved offsets), then stopped,
		// so the restart streams the backlog rather than sweeping a table.
		procs, err := h.start(ctx, p, s)
		if err != nil {
			return out, fmt.Errorf("first start: %w", err)
		}
		if err := stopAll(procs); err != nil {
			return out, fmt.Errorf("first stop: %w", err)
		}
	}
	if err := copyBacklog(ctx, s.db, p.table, h.templates[p.table], s.env.topic); err != nil {
		return out, err
	}
	m0 := h.st.mark(ctx)
	t0 := time.Now()
	procs, err := p.start(ctx, h, s.env)
	defer stopAll(procs)
	if err != nil {
		return out, err
	}
	budget := p.budget(h.cfg)
	_, werr := s.collector.waitEvents(ctx, h.cfg.Events, budget, func() error { return exitedEarly(procs) })
	end := time.Now()
	if werr != nil {
		if ctx.Err() != nil || exitedEarly(procs) != nil {
			return out, werr
		}
		out.Partial = true
	} else {
		end = lastAppend(s.collector.snapshot())
	}
	out.Delivered = s.collector.events()
	if out.Relay, err = usageOf(procs); err != nil {
		return out, err
	}
	// Stopped before the database's costs are read: a relay marks what
	// Kafka acknowledged a moment after the append (herald settles in the
	// background), and those writes are part of the drain's cost.
	if err := stopAll(procs); err != nil {
		out.Error = err.Error()
	}
	m1 := h.st.mark(ctx)
	out.Seconds = end.Sub(t0).Seconds()
	out.Rate = float64(out.Delivered) / out.Seconds
	out.Database = costSince(m0, m1, out.Delivered)
	out.Verify = verify(backlogWritten(h.cfg.Events, h.cfg.Aggregates), s.collector.snapshot(), !out.Partial)
	return out, nil
}

// lastAppend is the latest append time among records.
func lastAppend(recs []record) time.Time {
	var t time.Time
	for _, r := range recs {
		if r.Append.After(t) {
			t = r.Append
		}
	}
	return t
}

// sustained measures p under writers at full speed; a peer without start
// is the writers alone (its table names the shape).
func (h *harness) sustained(ctx context.Context, p peer, rep int) (out SustainedSample, err error) {
	out = SustainedSample{Rep: rep, Database: DatabaseCost{-1, -1}}
	s, err := h.newSetup(ctx, p, "sustained", rep)
	if err != nil {
		return out, err
	}
	defer s.close()
	var procs []*process
	if p.start != nil {
		if procs, err = h.start(ctx, p, s); err != nil {
			return out, err
		}
		defer stopAll(procs)
	}
	u0, err := usageOf(procs)
	if err != nil {
		return out, err
	}
	m0 := h.st.mark(ctx)
	before := s.collector.events()
	wctx, cancel := context.WithTimeout(ctx, h.cfg.Sustained)
	t0 := time.Now()
	written, total, werr := sustainedWriters(wctx, s.newWriter, h.cfg.SustainedWriters, h.cfg.EventsPerTx, h.cfg.Aggregates, h.cfg.PayloadBytes)
	cancel()
	elapsed := time.Since(t0).Seconds()
	published := s.collector.events() - before
	m1 := h.st.mark(ctx)
	if werr != nil {
		return out, fmt.Errorf("writers: %w", werr)
	}
	relay, err := usageSince(u0, procs)
	if err != nil {
		return out, err
	}
	out.Seconds, out.Written, out.Published = elapsed, total, published
	out.WrittenRate, out.PublishedRate = float64(total)/elapsed, float64(published)/elapsed
	out.Backlog = total - published
	out.Database = costSince(m0, m1, total)
	out.Relay = relay
	if err := stopAll(procs); err != nil {
		out.Error = err.Error()
	}
	out.Verify = verify(written, s.collector.snapshot(), false)
	return out, nil
}

// delivery measures p's commit -> append delay at a steady write rate.
func (h *harness) delivery(ctx context.Context, p peer, rep int) (out DeliverySample, err error) {
	out = DeliverySample{Rep: rep, Database: DatabaseCost{-1, -1}}
	s, err := h.newSetup(ctx, p, "delivery", rep)
	if err != nil {
		return out, err
	}
	defer s.close()
	procs, err := h.start(ctx, p, s)
	if err != nil {
		return out, err
	}
	defer stopAll(procs)
	u0, err := usageOf(procs)
	if err != nil {
		return out, err
	}
	m0 := h.st.mark(ctx)
	t0 := time.Now()
	written, committed, err := steadyWriters(ctx, s.newWriter, deliveryWriters, h.cfg.DeliveryRate, h.cfg.EventsPerTx, h.cfg.Aggregates, h.cfg.PayloadBytes, h.cfg.Delivery)
	out.WrittenRate = float64(len(committed)) / time.Since(t0).Seconds()
	if err != nil {
		return out, fmt.Errorf("writer: %w", err)
	}
	out.Events = len(committed)
	_, werr := s.collector.waitCaughtUp(ctx, out.Events, catchUpWait, func() error { return exitedEarly(procs) })
	// A peer still publishing when the wait ends fell behind the rate:
	// its late events are not lost, and its delays are those of the events
	// that made it. One that stopped publishing (a stall) lost them.
	out.Behind = werr != nil && errors.Is(werr, errWaitTimeout)
	died := exitedEarly(procs)
	m1 := h.st.mark(ctx)
	relay, err := usageSince(u0, procs)
	if err != nil {
		return out, err
	}
	out.Database = costSince(m0, m1, out.Events)
	out.Relay = relay
	if err := stopAll(procs); err != nil {
		out.Error = err.Error()
	}
	recs := s.collector.snapshot()
	out.Verify = verify(written, recs, !out.Behind)
	// Events that never came are the verification's finding (Missing);
	// a relay that died or an interrupt is the run's error.
	if werr != nil && (ctx.Err() != nil || died != nil) {
		out.Error = errors.Join(werr, errorOrNil(out.Error)).Error()
	}
	delays := firstDelays(recs, committed)
	out.P50, out.P90, out.P99 = percentile(delays, 50), percentile(delays, 90), percentile(delays, 99)
	out.Max = percentile(delays, 100)
	for _, q := range cdfPoints {
		out.CDF = append(out.CDF, percentile(delays, q))
	}
	if len(delays) == 0 {
		out.P50, out.P90, out.P99, out.Max, out.CDF = -1, -1, -1, -1, nil
	}
	return out, nil
}

func errorOrNil(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// firstDelays is, per event committed, the delay in ms from its commit to
// the append of its first record.
func firstDelays(recs []record, committed map[eventKey]time.Time) []float64 {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	seen := map[eventKey]bool{}
	var delays []float64
	for _, r := range recs {
		k := eventKey{r.Agg, r.Seq}
		at, ok := committed[k]
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		delays = append(delays, float64(r.Append.Sub(at).Microseconds())/1000)
	}
	return delays
}
