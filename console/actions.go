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
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// knownClasses are the error classes a quarantined event can carry: every
// class but the configuration ones, which never quarantine an event.
func knownClasses() []string {
	var out []string
	for _, c := range kafka.Classes() {
		if !kafka.IsConfiguration(c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// validateReason checks an action's reason: required, at most
// ReasonMaxChars characters of text.
func validateReason(reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return errors.New("reason: required (it is kept in the audit log)")
	case !utf8.ValidString(reason):
		return errors.New("reason: not valid text")
	case strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' }):
		return errors.New("reason: contains a control character")
	case utf8.RuneCountInString(reason) > ReasonMaxChars:
		return fmt.Errorf("reason: %d characters, at most %d", utf8.RuneCountInString(reason), ReasonMaxChars)
	}
	return nil
}

// actionData is the confirmation and the result of a quarantine action.
type actionData struct {
	Action  string
	Reason  string
	IDs     []string
	ByForm  url.Values // the filter, for a filter-based action
	Filter  bool
	Count   int
	Results []actionResult
	Done    bool
	Changed int
	Problem string
}

type actionResult struct {
	ID       string
	Outcome  string
	Released int
}

// quarantineAction retries or discards quarantined events: by selection
// (ids) or by filter, always with a reason, through the same store calls
// (and audit log) as herald quarantine retry/discard. The first post shows
// the count to confirm and changes nothing; the confirmed post acts only
// if the count is still the one confirmed.
func (h *Handler) quarantineAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if action != store.AuditRetry && action != store.AuditDiscard {
		h.fail(w, r, http.StatusNotFound, "no such action")
		return
	}
	form := r.PostForm
	d := actionData{Action: action, Reason: form.Get("reason"), Filter: form.Get("scope") == "filter"}
	fail := func(err error) {
		d.Problem = err.Error()
		h.render(w, http.StatusBadRequest, "action", h.view(r, "quarantine", "Quarantine: "+action, d))
	}
	if err := validateReason(d.Reason); err != nil {
		fail(err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	ids, err := h.actionIDs(ctx, form, &d)
	if err != nil {
		fail(err)
		return
	}
	d.IDs, d.Count = ids, len(ids)
	if form.Get("confirm") != "yes" {
		h.render(w, http.StatusOK, "action", h.view(r, "quarantine", "Confirm: "+action, d))
		return
	}
	if confirmed, err := strconv.Atoi(form.Get("count")); err != nil || confirmed != len(ids) {
		fail(fmt.Errorf("the selection changed since it was confirmed (%s confirmed, %d now): nothing was changed; "+
			"look at the events again", shorten(form.Get("count"), 12), len(ids)))
		return
	}
	st := h.cfg.Store
	resolve := st.Retry
	if action == store.AuditDiscard {
		resolve = st.Discard
	}
	actor := principalOf(r).actor()
	for _, id := range ids {
		ch, err := resolve(ctx, id, actor, d.Reason, false)
		if errors.Is(err, store.ErrEventNotFound) {
			d.Results = append(d.Results, actionResult{ID: id, Outcome: "no such event"})
			continue
		}
		if err != nil {
			h.logAction(r, action+" failed", "event_id", id, "done", d.Changed)
			d.Problem = fmt.Sprintf("stopped at %s: the database did not answer as expected (see the console's log); "+
				"%d of %d event(s) were changed before", id, d.Changed, len(ids))
			h.cfg.Logger.Error("console: "+action, "event_id", id, "error", err.Error())
			break
		}
		outcome := "unchanged (now " + ch.State + ")"
		switch {
		case ch.Changed:
			d.Changed++
			outcome = map[string]string{store.AuditRetry: "retried", store.AuditDiscard: "discarded"}[action]
		case action == store.AuditRetry && ch.State == store.StateDiscarded:
			outcome = "discarded: a discarded event cannot be retried"
		}
		d.Results = append(d.Results, actionResult{ID: id, Outcome: outcome, Released: ch.Released})
	}
	d.Done = true
	h.logAction(r, action, "events", len(ids), "changed", d.Changed, "filter", d.Filter)
	code := http.StatusOK
	if d.Problem != "" {
		code = http.StatusInternalServerError
	}
	h.render(w, code, "action", h.view(r, "quarantine", "Quarantine: "+action, d))
}

// actionIDs are the events an action names: the ids of a selection, or
// the quarantined events a filter matches (at most BulkLimit).
func (h *Handler) actionIDs(ctx context.Context, form url.Values, d *actionData) ([]string, error) {
	if d.Filter {
		if len(form["id"]) > 0 {
			return nil, errors.New("give a selection or a filter, not both")
		}
		f, err := quarantineFilterForm(form, time.Now())
		if err != nil {
			return nil, err
		}
		if !filterActive(f) {
			return nil, errors.New("filter: name at least one (class, aggregate, event type, time); to act on every quarantined event, select them")
		}
		d.ByForm = url.Values{}
		for _, k := range []string{"class", "aggregate_type", "aggregate_id", "event_type", "since", "until"} {
			if v := form.Get(k); v != "" {
				d.ByForm.Set(k, v)
			}
		}
		// The time bounds of a filter are read once and kept as times, so
		// that the confirmed action acts on what was counted.
		if !f.Since.IsZero() {
			d.ByForm.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
		}
		if !f.Until.IsZero() {
			d.ByForm.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
		}
		f.Limit = h.cfg.BulkLimit + 1
		list, err := h.cfg.Store.ListQuarantined(ctx, f)
		if err != nil {
			h.cfg.Logger.Error("console: list quarantined events", "error", err.Error())
			return nil, errors.New("listing the events the filter matches failed: the database did not answer as expected (see the console's log)")
		}
		if len(list) > h.cfg.BulkLimit {
			return nil, fmt.Errorf("more than %d events match: one action changes at most %d; narrow the filter", h.cfg.BulkLimit, h.cfg.BulkLimit)
		}
		if len(list) == 0 {
			return nil, errors.New("no quarantined event matches the filter")
		}
		ids := make([]string, len(list))
		for i, q := range list {
			ids[i] = q.ID
		}
		return ids, nil
	}
	raw := form["id"]
	if len(raw) == 0 {
		return nil, errors.New("select at least one event")
	}
	if len(raw) > h.cfg.BulkLimit {
		return nil, fmt.Errorf("%d events selected: one action changes at most %d", len(raw), h.cfg.BulkLimit)
	}
	var ids []string
	for _, id := range raw {
		u, err := uuid.Parse(strings.TrimSpace(id))
		if err != nil {
			return nil, fmt.Errorf("id: %q is not an event id", shorten(id, 80))
		}
		if s := u.String(); !slices.Contains(ids, s) {
			ids = append(ids, s)
		}
	}
	return ids, nil
}
