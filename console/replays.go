package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
)

// Replay rates, as herald replay's.
const (
	replayRateDefault = relay.ReplayRateDefault
	replayRateMax     = 100_000
)

// replays are the replays this console started and that still run or
// ended since: their progress and their end.
type replays struct {
	mu  sync.Mutex
	run map[string]*runningReplay
}

type runningReplay struct {
	name     string
	by       string
	started  time.Time
	cancel   context.CancelFunc
	replayed atomic.Int64
	// cancelled: an operator (or Close) stopped it; whatever error the
	// replay returned then is the cancellation's.
	cancelled atomic.Bool
	done      chan struct{}
	// set before done is closed
	ended time.Time
	err   error
}

// replayView is a replay as the page shows it.
type replayView struct {
	Name     string
	By       string
	Started  time.Time
	Replayed int64
	Running  bool
	Ended    time.Time
	Outcome  string
}

func newReplays() *replays { return &replays{run: map[string]*runningReplay{}} }

func (rs *replays) list() []replayView {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []replayView
	for _, r := range rs.run {
		v := replayView{Name: r.name, By: r.by, Started: r.started, Replayed: r.replayed.Load(), Running: true}
		select {
		case <-r.done:
			v.Running, v.Ended = false, r.ended
			switch {
			case r.cancelled.Load() || errors.Is(r.err, context.Canceled):
				v.Outcome = "cancelled (the checkpoint resumes it)"
			case r.err == nil:
				v.Outcome = "finished"
			default:
				v.Outcome = "failed: " + shorten(r.err.Error(), 300)
			}
		default:
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out
}

// replayStart starts a replay with herald replay's rules: a checkpoint
// name, a time range, optional filters, at most the given rate, to the
// replay topics (created like their live topics); the same checkpoint
// resumes, another selection under it is refused.
func (h *Handler) replayStart(w http.ResponseWriter, r *http.Request) {
	d, err := h.replaysData(r)
	if err != nil {
		h.storeError(w, r, "listing replays", err)
		return
	}
	form := r.PostForm
	d.Form = form
	fail := func(code int, err error) {
		d.Problem = err.Error()
		h.render(w, code, "replays", h.view(r, "replays", "Replays", d))
	}
	cfg := h.cfg.Replay
	if cfg == nil {
		fail(http.StatusConflict, errors.New("replays are not configured in this console (herald console needs Kafka settings and routes)"))
		return
	}
	name := strings.TrimSpace(form.Get("checkpoint"))
	now := time.Now()
	var errs []error
	if err := store.ValidateCheckpointName(name); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint: %w", err))
	}
	sel := store.ReplaySelection{AggregateType: strings.TrimSpace(form.Get("aggregate_type")),
		AggregateID: strings.TrimSpace(form.Get("aggregate_id")), EventType: strings.TrimSpace(form.Get("event_type"))}
	from, to := strings.TrimSpace(form.Get("from")), strings.TrimSpace(form.Get("to"))
	if to == "" {
		to = "0s"
	}
	if sel.From, err = parseTime("from", from, now); err != nil {
		errs = append(errs, err)
	}
	if sel.To, err = parseTime("to", to, now); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := sel.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := (store.EventSearch{AggregateType: sel.AggregateType, AggregateID: sel.AggregateID, EventType: sel.EventType}).Validate(); err != nil {
		errs = append(errs, err)
	}
	rate, err := strconv.Atoi(strings.TrimSpace(form.Get("rate")))
	if err != nil || rate < 1 || rate > replayRateMax {
		errs = append(errs, fmt.Errorf("rate: %q, want 1 to %d records per second", shorten(form.Get("rate"), 20), replayRateMax))
	}
	if len(errs) > 0 {
		fail(http.StatusBadRequest, errors.Join(errs...))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	// As herald replay: a range given relative to now resumes the saved
	// range; a checkpoint saved for another selection is refused.
	resume := isDuration(from) || isDuration(to)
	saved, err := h.cfg.Store.LoadReplayCheckpoint(ctx, name, sel, resume)
	switch {
	case errors.Is(err, store.ErrCheckpointMismatch):
		fail(http.StatusBadRequest, fmt.Errorf("checkpoint %s: %w; use a new checkpoint name for a new replay", name, err))
		return
	case err != nil:
		h.storeError(w, r, "reading the replay checkpoint", err)
		return
	case saved.Finished:
		fail(http.StatusConflict, fmt.Errorf("replay %q already finished: %d event(s); use a new checkpoint name for a new replay", name, saved.Replayed))
		return
	}
	lives, err := relay.ReplayTopics(relay.ReplayConfig{Selection: sel, Topics: cfg.Topics, DefaultTopic: cfg.DefaultTopic, Records: cfg.Records})
	if err != nil {
		fail(http.StatusBadRequest, fmt.Errorf("aggregate type: %w", err))
		return
	}
	for _, live := range lives {
		if _, err := kafka.EnsureReplayTopic(ctx, cfg.Admin, live, live+cfg.Suffix); err != nil {
			h.cfg.Logger.Error("console: replay topic", "topic", live+cfg.Suffix, "error", err.Error())
			fail(http.StatusBadGateway, fmt.Errorf("the replay topic %s could not be made ready: %s", live+cfg.Suffix, shorten(err.Error(), 300)))
			return
		}
	}
	rr := &runningReplay{name: name, by: principalOf(r).name, started: now, done: make(chan struct{})}
	rp, err := relay.NewReplayer(relay.ReplayConfig{
		Checkpoint: name, Selection: sel, Topics: cfg.Topics, DefaultTopic: cfg.DefaultTopic, Records: cfg.Records, Rate: rate,
		ResumeSavedRange: resume, TopicFor: func(live string) string { return live + cfg.Suffix },
		Logger: h.cfg.Logger, Progress: func(n int64) { rr.replayed.Store(n) },
	}, h.cfg.Store, cfg.Producer)
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	h.replays.mu.Lock()
	if prev := h.replays.run[name]; prev != nil {
		select {
		case <-prev.done:
		default:
			h.replays.mu.Unlock()
			fail(http.StatusConflict, fmt.Errorf("replay %q is already running", name))
			return
		}
	}
	// The replay outlives the request; cancelling it (or the console
	// stopping) stops it after the page in flight, its checkpoint saved.
	runCtx, runCancel := context.WithCancel(context.WithoutCancel(r.Context()))
	rr.cancel = runCancel
	h.replays.run[name] = rr
	h.replays.mu.Unlock()
	h.logAction(r, "replay started", "checkpoint", name, "rate", rate)
	go func() {
		_, err := rp.Run(runCtx)
		runCancel()
		rr.ended, rr.err = time.Now(), err
		close(rr.done)
		if err != nil && !rr.cancelled.Load() && !errors.Is(err, context.Canceled) {
			h.cfg.Logger.Error("console: replay failed", "checkpoint", name, "error", err.Error())
		}
	}()
	http.Redirect(w, r, h.cfg.Prefix+"/replays?"+url.Values{"started": {name}}.Encode(), http.StatusSeeOther)
}

// replayCancel stops a replay this console runs.
func (h *Handler) replayCancel(w http.ResponseWriter, r *http.Request) {
	name := r.PostForm.Get("checkpoint")
	h.replays.mu.Lock()
	rr := h.replays.run[name]
	h.replays.mu.Unlock()
	if rr == nil {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("no replay %q runs in this console", shorten(name, 128)))
		return
	}
	select {
	case <-rr.done: // it ended meanwhile: nothing to cancel
	default:
		rr.cancelled.Store(true)
		rr.cancel()
		<-rr.done
	}
	h.logAction(r, "replay cancelled", "checkpoint", name, "replayed", rr.replayed.Load())
	http.Redirect(w, r, h.cfg.Prefix+"/replays", http.StatusSeeOther)
}

// Close cancels the replays the console runs and waits for them to stop
// (each saves its checkpoint after the page in flight).
func (h *Handler) Close() {
	h.replays.mu.Lock()
	var all []*runningReplay
	for _, r := range h.replays.run {
		all = append(all, r)
	}
	h.replays.mu.Unlock()
	for _, r := range all {
		r.cancelled.Store(true)
		r.cancel()
		<-r.done
	}
}

// isDuration says whether a time field is relative to now.
func isDuration(v string) bool {
	_, err := time.ParseDuration(v)
	return err == nil
}
