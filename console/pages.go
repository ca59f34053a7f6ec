package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/status"
	"github.com/herald-outbox/herald/store"
)

// pageTimeout bounds the database work of one page.
const pageTimeout = 10 * time.Second

// kafkaTimeout bounds the Kafka part of the overview.
const kafkaTimeout = 3 * time.Second

// overviewCacheFor is how long one overview reading serves every page
// that asks.
const overviewCacheFor = time.Second

// readOverview reads the status report (package status, as herald status
// does), at most once a second whatever the number of open pages.
func (h *Handler) readOverview(ctx context.Context) (status.Report, error) {
	h.overviewMu.Lock()
	defer h.overviewMu.Unlock()
	if c := h.overview; c != nil && time.Since(c.at) < overviewCacheFor {
		return c.rep, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	rep, err := status.Read(ctx, h.cfg.Store)
	if err == nil && h.cfg.Kafka != nil {
		// Kafka is reported on, not required, as in herald status; an
		// unanswering cluster holds the page up for a few seconds only.
		kctx, kcancel := context.WithTimeout(ctx, kafkaTimeout)
		_ = rep.ReadKafka(kctx, h.cfg.Kafka.Admin, h.cfg.Kafka.Topics, h.cfg.Kafka.Groups)
		kcancel()
	}
	h.overview = &overviewCache{at: time.Now(), rep: rep, err: err}
	return rep, err
}

type overviewData struct {
	Report        status.Report
	Kafka         bool
	FailureKinds  []failureCount
	PendingEvents int64
}

type failureCount struct {
	Class string
	N     int64
}

func (h *Handler) overviewData(r *http.Request) (overviewData, error) {
	rep, err := h.readOverview(r.Context())
	if err != nil {
		return overviewData{}, err
	}
	d := overviewData{Report: rep, Kafka: h.cfg.Kafka != nil,
		PendingEvents: rep.Backlog.Ready + rep.Backlog.BackingOff + rep.Backlog.Held}
	for c, n := range rep.Backlog.FailuresLastHour {
		d.FailureKinds = append(d.FailureKinds, failureCount{c, n})
	}
	slices.SortFunc(d.FailureKinds, func(a, b failureCount) int { return strings.Compare(a.Class, b.Class) })
	return d, nil
}

func (h *Handler) overviewPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.overviewData(r)
	if err != nil {
		h.storeError(w, r, "reading the status", err)
		return
	}
	h.render(w, http.StatusOK, "overview", h.view(r, "overview", "Overview", d))
}

// overviewFragment is the overview's live part, which the page's script
// swaps in every RefreshInterval.
func (h *Handler) overviewFragment(w http.ResponseWriter, r *http.Request) {
	d, err := h.overviewData(r)
	if err != nil {
		h.storeError(w, r, "reading the status", err)
		return
	}
	h.render(w, http.StatusOK, "fragment-overview", h.view(r, "overview", "Overview", d))
}

// Events.

type eventsData struct {
	Search  store.EventSearch
	Form    url.Values
	States  []string
	Page    store.EventPage
	NextURL string
	Problem string
	Ran     bool
}

// parseTime reads a time field: RFC 3339, a date, or a duration ago (2h).
func parseTime(field, v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%s: %q: a duration counts back from now and must not be negative", field, v)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: %q is neither a time (2026-12-04T10:00:00Z, 2026-12-04) nor a duration ago (2h)", field, v)
}

func (h *Handler) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := eventsData{Form: q, States: store.EventStates}
	now := time.Now()
	s := store.EventSearch{
		EventID: strings.TrimSpace(q.Get("event_id")), AggregateType: q.Get("aggregate_type"),
		AggregateID: q.Get("aggregate_id"), EventType: q.Get("event_type"), State: q.Get("state"), After: q.Get("after"),
	}
	var errs []error
	var err error
	if s.From, err = parseTime("from", q.Get("from"), now); err != nil {
		errs = append(errs, err)
	}
	if s.To, err = parseTime("to", q.Get("to"), now); err != nil {
		errs = append(errs, err)
	}
	if v := q.Get("limit"); v != "" {
		if s.Limit, err = strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("limit: %q is not a number", v))
		}
	}
	if err := s.Validate(); err != nil {
		errs = append(errs, err)
	}
	d.Search = s
	if len(errs) > 0 {
		d.Problem = errors.Join(errs...).Error()
		h.render(w, http.StatusBadRequest, "events", h.view(r, "events", "Events", d))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	if d.Page, err = h.cfg.Store.SearchEvents(ctx, s); err != nil {
		h.storeError(w, r, "searching events", err)
		return
	}
	d.Ran = true
	if d.Page.Next != "" {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("after", d.Page.Next)
		d.NextURL = h.cfg.Prefix + "/events?" + next.Encode()
	}
	h.render(w, http.StatusOK, "events", h.view(r, "events", "Events", d))
}

type eventData struct {
	Event       store.EventDetail
	ShowPayload bool
	Payload     string
	Quarantined bool
}

func (h *Handler) eventPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("event id: %q is not a UUID", shorten(id, 80)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	ev, err := h.cfg.Store.ShowEvent(ctx, strings.ToLower(id))
	if errors.Is(err, store.ErrEventNotFound) {
		h.fail(w, r, http.StatusNotFound, "no event has the id "+id)
		return
	}
	if err != nil {
		h.storeError(w, r, "reading the event", err)
		return
	}
	d := eventData{Event: ev, Quarantined: ev.State == store.StateQuarantined}
	// The payload is the business's data: shown to operators who ask,
	// never to read-only users.
	if r.URL.Query().Get("payload") == "1" {
		if !principalOf(r).operator() {
			h.fail(w, r, http.StatusForbidden, "refused: payloads are shown to operators only")
			return
		}
		d.ShowPayload, d.Payload = true, string(ev.Payload)
	}
	h.render(w, http.StatusOK, "event", h.view(r, "events", "Event "+ev.ID, d))
}

type timelineData struct {
	Timeline store.Timeline
	NextURL  string
}

func (h *Handler) timelinePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := store.AggregateKey{AggregateType: q.Get("aggregate_type"), AggregateID: q.Get("aggregate_id")}
	var after uint64
	if v := q.Get("after"); v != "" {
		var err error
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("after: %q is not a position in the aggregate", shorten(v, 40)))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	tl, err := h.cfg.Store.AggregateTimeline(ctx, key, after, store.EventPageLimitDefault)
	if err != nil {
		if key.AggregateType == "" || key.AggregateID == "" || errors.Is(err, errInput) || !isDatabaseError(err) {
			h.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		h.storeError(w, r, "reading the timeline", err)
		return
	}
	d := timelineData{Timeline: tl}
	if tl.Next != 0 {
		d.NextURL = h.cfg.Prefix + "/timeline?" + queryOf("aggregate_type", key.AggregateType, "aggregate_id", key.AggregateID,
			"after", strconv.FormatUint(tl.Next, 10))
	}
	h.render(w, http.StatusOK, "timeline", h.view(r, "events", "Aggregate "+key.AggregateType+"/"+key.AggregateID, d))
}

var errInput = errors.New("bad input")

// isDatabaseError tells a store's failure to read from its refusal of the
// input (which names a field).
func isDatabaseError(err error) bool {
	msg := err.Error()
	for _, field := range []string{"aggregate", "event id", "event type", "state", "time range", "limit", "cursor"} {
		if strings.HasPrefix(msg, field) {
			return false
		}
	}
	return true
}

// Quarantine.

// quarantineFilterForm reads the quarantine filters of a form or query.
func quarantineFilterForm(v url.Values, now time.Time) (store.QuarantineFilter, error) {
	f := store.QuarantineFilter{
		AggregateType: strings.TrimSpace(v.Get("aggregate_type")), AggregateID: strings.TrimSpace(v.Get("aggregate_id")),
		EventType: strings.TrimSpace(v.Get("event_type")), ErrorClass: strings.TrimSpace(v.Get("class")),
	}
	var errs []error
	var err error
	if f.Since, err = parseTime("since", v.Get("since"), now); err != nil {
		errs = append(errs, err)
	}
	if f.Until, err = parseTime("until", v.Get("until"), now); err != nil {
		errs = append(errs, err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		errs = append(errs, errors.New("since must be before until"))
	}
	if f.ErrorClass != "" && !slices.Contains(knownClasses(), f.ErrorClass) {
		errs = append(errs, fmt.Errorf("class: %q is none of %s", f.ErrorClass, strings.Join(knownClasses(), ", ")))
	}
	if err := (store.EventSearch{AggregateType: f.AggregateType, AggregateID: f.AggregateID, EventType: f.EventType}).Validate(); err != nil {
		errs = append(errs, err)
	}
	return f, errors.Join(errs...)
}

func filterActive(f store.QuarantineFilter) bool {
	return f.AggregateType != "" || f.AggregateID != "" || f.EventType != "" || f.ErrorClass != "" ||
		!f.Since.IsZero() || !f.Until.IsZero()
}

type quarantineData struct {
	Form    url.Values
	Classes []string
	Events  []store.QuarantinedEvent
	NextURL string
	Filter  bool
	Problem string
	Total   int
	Capped  bool
}

func (h *Handler) quarantinePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := quarantineData{Form: q, Classes: knownClasses()}
	f, err := quarantineFilterForm(q, time.Now())
	if err == nil && q.Get("after") != "" {
		f.After, err = parseQuarantineCursor(q.Get("after"))
	}
	if err != nil {
		d.Problem = err.Error()
		h.render(w, http.StatusBadRequest, "quarantine", h.view(r, "quarantine", "Quarantine", d))
		return
	}
	d.Filter = filterActive(f)
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	f.Limit = store.EventPageLimitDefault + 1
	list, err := h.cfg.Store.ListQuarantined(ctx, f)
	if err != nil {
		h.storeError(w, r, "listing quarantined events", err)
		return
	}
	if len(list) > store.EventPageLimitDefault {
		list = list[:store.EventPageLimitDefault]
		last := list[len(list)-1]
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("after", last.QuarantinedAt.UTC().Format(time.RFC3339Nano)+"_"+last.ID)
		d.NextURL = h.cfg.Prefix + "/quarantine?" + next.Encode()
	}
	d.Events = list
	h.render(w, http.StatusOK, "quarantine", h.view(r, "quarantine", "Quarantine", d))
}

func parseQuarantineCursor(v string) (*store.QuarantineCursor, error) {
	at, id, ok := strings.Cut(v, "_")
	t, err := time.Parse(time.RFC3339Nano, at)
	if _, uerr := uuid.Parse(id); !ok || err != nil || uerr != nil {
		return nil, fmt.Errorf("after: %q is not a position in the list", shorten(v, 80))
	}
	return &store.QuarantineCursor{QuarantinedAt: t, ID: strings.ToLower(id)}, nil
}

// Replays.

type replaysData struct {
	Saved      []store.ReplayProgress
	Running    []replayView
	Configured bool
	Form       url.Values
	Problem    string
	Flash      string
	RateMax    int
	Suffix     string
}

func (h *Handler) replaysData(r *http.Request) (replaysData, error) {
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	saved, err := h.cfg.Store.ListReplays(ctx, 50)
	if err != nil {
		return replaysData{}, err
	}
	d := replaysData{Saved: saved, Running: h.replays.list(), Configured: h.cfg.Replay != nil, RateMax: replayRateMax}
	if h.cfg.Replay != nil {
		d.Suffix = h.cfg.Replay.Suffix
	}
	return d, nil
}

func (h *Handler) replaysPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.replaysData(r)
	if err != nil {
		h.storeError(w, r, "listing replays", err)
		return
	}
	d.Form = url.Values{"rate": {strconv.Itoa(replayRateDefault)}, "from": {"1h"}, "to": {"0s"}}
	d.Flash = r.URL.Query().Get("started")
	if d.Flash != "" {
		d.Flash = "replay " + shorten(d.Flash, 128) + " started"
	}
	h.render(w, http.StatusOK, "replays", h.view(r, "replays", "Replays", d))
}

func (h *Handler) replaysFragment(w http.ResponseWriter, r *http.Request) {
	d, err := h.replaysData(r)
	if err != nil {
		h.storeError(w, r, "listing replays", err)
		return
	}
	h.render(w, http.StatusOK, "fragment-replays", h.view(r, "replays", "Replays", d))
}

// Audit.

type auditData struct {
	Page    store.AuditPage
	NextURL string
}

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request) {
	var before int64
	if v := r.URL.Query().Get("before"); v != "" {
		var err error
		if before, err = strconv.ParseInt(v, 10, 64); err != nil || before < 1 {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("before: %q is not a position in the audit log", shorten(v, 40)))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	p, err := h.cfg.Store.ReadAuditLog(ctx, before, store.EventPageLimitDefault)
	if err != nil {
		h.storeError(w, r, "reading the audit log", err)
		return
	}
	d := auditData{Page: p}
	if p.Next != 0 {
		d.NextURL = h.cfg.Prefix + "/audit?before=" + strconv.FormatInt(p.Next, 10)
	}
	h.render(w, http.StatusOK, "audit", h.view(r, "audit", "Audit log", d))
}
