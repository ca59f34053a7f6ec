package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The reads of the web console (package console): events by search, an
// aggregate's timeline, the audit log and the replays. Every one walks an
// index in pages of bounded size with a keyset cursor (never OFFSET), and
// every event's state is named here, by EventRow.state, never by the caller.

// EventSearch selects events for a page of the console's event search.
// Zero fields match all.
type EventSearch struct {
	// EventID finds one event (the other fields are then ignored).
	EventID string
	// AggregateType and AggregateID narrow to an aggregate type or one
	// aggregate; an AggregateID needs its AggregateType.
	AggregateType string
	AggregateID   string
	// EventType narrows to one event type.
	EventType string
	// State is one of StatePending, StateBackingOff, StateHeld,
	// StateQuarantined, StateDiscarded, StatePublished.
	State string
	// From and To bound when events were added to the outbox (the time in
	// their UUIDv7 id, as ReplaySelection's), From included, To excluded.
	From, To time.Time
	// After continues a search from a page's Next.
	After string
	// Limit is the most events a page returns. Defaults to
	// EventPageLimitDefault; at most EventPageLimitMax.
	Limit int
}

// Event page sizes.
const (
	EventPageLimitDefault = 50
	EventPageLimitMax     = 500
	// EventScanWindow is the most rows one page of a search without an
	// aggregate reads: filters no index serves (aggregate type alone,
	// event type, state) are applied to this window, so a page costs a
	// bounded index walk however few rows match, and says where it
	// stopped.
	EventScanWindow = 2000
)

// EventStates lists the states EventSearch.State accepts.
var EventStates = []string{StatePending, StateBackingOff, StateHeld, StateQuarantined, StateDiscarded, StatePublished}

// Validate checks a search, naming the field at fault.
func (s EventSearch) Validate() error {
	var errs []error
	if s.EventID != "" {
		if _, err := uuid.Parse(s.EventID); err != nil {
			errs = append(errs, fmt.Errorf("event id: %q is not a UUID", s.EventID))
		}
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{{"aggregate type", s.AggregateType, 64}, {"aggregate id", s.AggregateID, 128}, {"event type", s.EventType, 128}} {
		if !utf8.ValidString(f.value) || strings.ContainsRune(f.value, 0) {
			errs = append(errs, fmt.Errorf("%s: not valid text", f.name))
		} else if n := utf8.RuneCountInString(f.value); n > f.max {
			errs = append(errs, fmt.Errorf("%s: %d characters, at most %d", f.name, n, f.max))
		}
	}
	if s.AggregateID != "" && s.AggregateType == "" {
		errs = append(errs, errors.New("aggregate id: needs its aggregate type"))
	}
	if s.State != "" && !slices.Contains(EventStates, s.State) {
		errs = append(errs, fmt.Errorf("state: %q is none of %s", s.State, strings.Join(EventStates, ", ")))
	}
	if !s.From.IsZero() && !s.To.IsZero() && !s.From.Before(s.To) {
		errs = append(errs, fmt.Errorf("time range: from (%s) must be before to (%s)",
			s.From.UTC().Format(time.RFC3339), s.To.UTC().Format(time.RFC3339)))
	}
	if s.Limit < 0 || s.Limit > EventPageLimitMax {
		errs = append(errs, fmt.Errorf("limit: %d, want 1 to %d", s.Limit, EventPageLimitMax))
	}
	if s.After != "" {
		if _, err := parseEventCursor(s.After, s.AggregateID != ""); err != nil {
			errs = append(errs, fmt.Errorf("cursor: %w", err))
		}
	}
	return errors.Join(errs...)
}

// EventSummary is one event as a list shows it: no payload, no headers.
type EventSummary struct {
	ID            string     `json:"id"`
	AggregateType string     `json:"aggregate_type"`
	AggregateID   string     `json:"aggregate_id"`
	AggregateSeq  uint64     `json:"aggregate_seq"`
	EventType     string     `json:"event_type"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	ErrorClass    string     `json:"error_class,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	OccurredAt    time.Time  `json:"occurred_at"`
	PublishedAt   *time.Time `json:"published_at,omitempty"`
	QuarantinedAt *time.Time `json:"quarantined_at,omitempty"`
}

// EventPage is one page of a search.
type EventPage struct {
	Events []EventSummary `json:"events"`
	// Next continues the search after this page; "" when nothing is left.
	Next string `json:"next,omitempty"`
	// Examined counts the rows read for the page (the index walk), which
	// is more than len(Events) when filters no index serves left some out.
	Examined int `json:"examined"`
}

// EventWindow asks a dialect for a window of rows, newest id first
// (the primary key's order: UUIDv7 ids sort by when they were added).
type EventWindow struct {
	// Before, when set, reads only ids below it (the cursor).
	Before string
	// MinID and MaxID, when set, bound the ids: MinID included, MaxID
	// excluded.
	MinID, MaxID string
	// Limit is the most rows to read: the other filters are the core's, so
	// that a page's work stays bounded whatever they match.
	Limit int
}

// AggregateWindow asks a dialect for an aggregate's events after AfterSeq,
// in aggregate_seq order.
type AggregateWindow struct {
	Key      AggregateKey
	AfterSeq uint64
	Limit    int
}

// EventsDialect serves the console's reads. Rows come without payload and
// headers (a list never shows them, and a row a writer got wrong there
// must not break a list); their states are named by the core.
type EventsDialect interface {
	// ReadEventWindow returns up to w.Limit rows as w says, by id
	// descending, walking the primary key (ScanEventRows).
	ReadEventWindow(ctx context.Context, q Querier, w EventWindow) ([]EventRow, error)
	// ReadAggregateWindow returns up to w.Limit events of one aggregate
	// after w.AfterSeq, by aggregate_seq, walking uq_aggregate_seq
	// (ScanEventRows).
	ReadAggregateWindow(ctx context.Context, q Querier, w AggregateWindow) ([]EventRow, error)
	// ReadAuditLog returns up to limit audit records with an id below
	// beforeID (0: from the newest), newest first.
	ReadAuditLog(ctx context.Context, q Querier, beforeID int64, limit int) ([]AuditEntry, error)
	// ListReplayCheckpoints returns up to limit replay checkpoints, the
	// most recently updated first.
	ListReplayCheckpoints(ctx context.Context, q Querier, limit int) ([]ReplayProgress, error)
	// ReadDeliveryDelays returns, for up to limit events published in the
	// last window, newest first, the time from occurred_at to published_at.
	ReadDeliveryDelays(ctx context.Context, q Querier, window time.Duration, limit int) ([]time.Duration, error)
}

// Summary is the row as a list shows it; watermark is the change
// stream's (zero without one).
func (r EventRow) Summary(watermark time.Time) EventSummary {
	return EventSummary{
		ID: r.ID, AggregateType: r.Key.AggregateType, AggregateID: r.Key.AggregateID, AggregateSeq: r.Key.Seq,
		EventType: r.EventType, State: r.state(watermark), Attempts: r.Attempts, ErrorClass: r.ErrorClass,
		LastError: r.LastError, OccurredAt: r.OccurredAt, PublishedAt: r.PublishedAt, QuarantinedAt: r.QuarantinedAt,
	}
}

func (s *Store) events() (EventsDialect, error) {
	d, ok := s.dialect.(EventsDialect)
	if !ok {
		return nil, fmt.Errorf("the %s dialect does not serve the console's reads", s.dialect.Name())
	}
	return d, nil
}

// SearchEvents returns one page of events matching s: one event by id; an
// aggregate's events in aggregate_seq order; otherwise the newest first,
// reading at most EventScanWindow rows per page.
func (s *Store) SearchEvents(ctx context.Context, search EventSearch) (EventPage, error) {
	if err := search.Validate(); err != nil {
		return EventPage{}, err
	}
	d, err := s.events()
	if err != nil {
		return EventPage{}, err
	}
	limit := search.Limit
	if limit == 0 {
		limit = EventPageLimitDefault
	}
	page := EventPage{Events: []EventSummary{}}
	watermark, err := s.watermark(ctx)
	if err != nil {
		return page, fmt.Errorf("search events: %w", err)
	}
	if search.EventID != "" {
		row, err := s.dialect.ReadEvent(ctx, s.db, strings.ToLower(search.EventID), false)
		if errors.Is(err, ErrEventNotFound) {
			return page, nil
		}
		if err != nil {
			return page, fmt.Errorf("search events: %w", err)
		}
		page.Events, page.Examined = append(page.Events, row.Summary(watermark)), 1
		return page, nil
	}
	match := func(r EventRow) bool {
		if search.AggregateType != "" && r.Key.AggregateType != search.AggregateType {
			return false
		}
		if search.EventType != "" && r.EventType != search.EventType {
			return false
		}
		if search.State != "" && r.state(watermark) != search.State {
			return false
		}
		if !search.From.IsZero() && r.ID < uuidFloor(search.From) || !search.To.IsZero() && r.ID >= uuidFloor(search.To) {
			return false
		}
		return true
	}
	cursor, _ := parseEventCursor(search.After, search.AggregateID != "")
	if search.AggregateID != "" {
		// One aggregate: its index holds it all; a window of at most
		// EventScanWindow rows per page still bounds a page's work.
		rows, err := d.ReadAggregateWindow(ctx, s.db, AggregateWindow{
			Key: AggregateKey{search.AggregateType, search.AggregateID}, AfterSeq: cursor.seq, Limit: EventScanWindow,
		})
		if err != nil {
			return page, fmt.Errorf("search events: %w", err)
		}
		page.fill(rows, limit, match, func(r EventRow) string { return strconv.FormatUint(r.Key.Seq, 10) }, len(rows) == EventScanWindow, watermark)
		return page, nil
	}
	w := EventWindow{Before: cursor.id, Limit: EventScanWindow}
	if !search.From.IsZero() {
		w.MinID = uuidFloor(search.From)
	}
	if !search.To.IsZero() {
		w.MaxID = uuidFloor(search.To)
	}
	rows, err := d.ReadEventWindow(ctx, s.db, w)
	if err != nil {
		return page, fmt.Errorf("search events: %w", err)
	}
	page.fill(rows, limit, match, func(r EventRow) string { return r.ID }, len(rows) == EventScanWindow, watermark)
	return page, nil
}

// fill takes the matching rows of a window up to limit; Next is the last
// row taken when the page is full, or the window's last row when the
// window was full (more rows may follow it).
func (p *EventPage) fill(rows []EventRow, limit int, match func(EventRow) bool, key func(EventRow) string, windowFull bool, watermark time.Time) {
	for i, r := range rows {
		p.Examined = i + 1
		if !match(r) {
			continue
		}
		p.Events = append(p.Events, r.Summary(watermark))
		if len(p.Events) == limit {
			if i < len(rows)-1 || windowFull {
				p.Next = key(r)
			}
			return
		}
	}
	if windowFull && len(rows) > 0 {
		p.Next = key(rows[len(rows)-1])
	}
}

type eventCursor struct {
	id  string
	seq uint64
}

// parseEventCursor reads a cursor: an aggregate_seq within one aggregate,
// an event id otherwise.
func parseEventCursor(c string, inAggregate bool) (eventCursor, error) {
	if c == "" {
		return eventCursor{}, nil
	}
	if inAggregate {
		seq, err := strconv.ParseUint(c, 10, 64)
		if err != nil {
			return eventCursor{}, fmt.Errorf("%q is not a position in the aggregate", c)
		}
		return eventCursor{seq: seq}, nil
	}
	u, err := uuid.Parse(c)
	if err != nil {
		return eventCursor{}, fmt.Errorf("%q is not an event id", c)
	}
	return eventCursor{id: u.String()}, nil
}

// uuidFloor is the smallest UUIDv7 of t's millisecond, in text: ids of
// events added at or after t sort at or after it.
func uuidFloor(t time.Time) string {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// TimelineEvent is one event of an aggregate's timeline.
type TimelineEvent struct {
	EventSummary
	// HoldsTheRest marks the aggregate's first event not done (published
	// or discarded): the events after it wait for it (docs/design.md,
	// section 6).
	HoldsTheRest bool `json:"holds_the_rest,omitempty"`
}

// Timeline is an aggregate's events in aggregate_seq order.
type Timeline struct {
	Key    AggregateKey    `json:"aggregate"`
	Events []TimelineEvent `json:"events"`
	// Head is the id of the event that holds the rest ("" when every
	// event shown is done); Waiting counts the events shown behind it.
	Head    string `json:"head,omitempty"`
	Waiting int    `json:"waiting"`
	// Next continues the timeline after this page ("" at its end).
	Next uint64 `json:"next,omitempty"`
}

// AggregateTimeline returns up to limit events of an aggregate after
// afterSeq, in order, marking the event that holds the rest.
func (s *Store) AggregateTimeline(ctx context.Context, key AggregateKey, afterSeq uint64, limit int) (Timeline, error) {
	if limit <= 0 || limit > EventPageLimitMax {
		limit = EventPageLimitDefault
	}
	if err := (EventSearch{AggregateType: key.AggregateType, AggregateID: key.AggregateID}).Validate(); err != nil {
		return Timeline{}, err
	}
	if key.AggregateType == "" || key.AggregateID == "" {
		return Timeline{}, errors.New("aggregate: both its type and its id are needed")
	}
	d, err := s.events()
	if err != nil {
		return Timeline{}, err
	}
	rows, err := d.ReadAggregateWindow(ctx, s.db, AggregateWindow{Key: key, AfterSeq: afterSeq, Limit: limit + 1})
	if err != nil {
		return Timeline{}, fmt.Errorf("aggregate timeline: %w", err)
	}
	watermark, err := s.watermark(ctx)
	if err != nil {
		return Timeline{}, fmt.Errorf("aggregate timeline: %w", err)
	}
	tl := Timeline{Key: key, Events: []TimelineEvent{}}
	if len(rows) > limit {
		rows = rows[:limit]
		tl.Next = rows[limit-1].Key.Seq
	}
	for _, r := range rows {
		ev := TimelineEvent{EventSummary: r.Summary(watermark)}
		done := ev.State == StatePublished || ev.State == StateDiscarded
		switch {
		case tl.Head == "" && !done:
			ev.HoldsTheRest, tl.Head = true, r.ID
		case tl.Head != "" && !done && ev.State != StateQuarantined:
			tl.Waiting++
		}
		tl.Events = append(tl.Events, ev)
	}
	return tl, nil
}

// AuditEntry is one record of the audit log with its position in it.
type AuditEntry struct {
	ID int64 `json:"id"`
	AuditRecord
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// Next continues after this page (0 at the end).
	Next int64 `json:"next,omitempty"`
}

// ReadAuditLog returns up to limit audit records older than beforeID (0:
// from the newest), newest first.
func (s *Store) ReadAuditLog(ctx context.Context, beforeID int64, limit int) (AuditPage, error) {
	if limit <= 0 || limit > EventPageLimitMax {
		limit = EventPageLimitDefault
	}
	if beforeID < 0 {
		return AuditPage{}, fmt.Errorf("cursor: %d is not a position in the audit log", beforeID)
	}
	d, err := s.events()
	if err != nil {
		return AuditPage{}, err
	}
	entries, err := d.ReadAuditLog(ctx, s.db, beforeID, limit+1)
	if err != nil {
		return AuditPage{}, fmt.Errorf("audit log: %w", err)
	}
	p := AuditPage{Entries: entries}
	if len(entries) > limit {
		p.Entries = entries[:limit]
		p.Next = entries[limit-1].ID
	}
	if p.Entries == nil {
		p.Entries = []AuditEntry{}
	}
	return p, nil
}

// ReplayProgress is a replay checkpoint as saved.
type ReplayProgress struct {
	Name      string          `json:"name"`
	Selection ReplaySelection `json:"selection"`
	Replayed  int64           `json:"replayed"`
	Finished  bool            `json:"finished"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// ListReplays returns up to limit replay checkpoints, the most recently
// updated first.
func (s *Store) ListReplays(ctx context.Context, limit int) ([]ReplayProgress, error) {
	if limit <= 0 {
		limit = EventPageLimitDefault
	}
	d, err := s.events()
	if err != nil {
		return nil, err
	}
	list, err := d.ListReplayCheckpoints(ctx, s.db, limit)
	if err != nil {
		return nil, fmt.Errorf("list replays: %w", err)
	}
	if list == nil {
		list = []ReplayProgress{}
	}
	return list, nil
}

// DeliveryDelaySample is how many of the last hour's published events the
// delivery delay is measured over (the newest).
const DeliveryDelaySample = 10_000

// DeliveryDelay is the delay from an event's occurred_at to its
// publication, over the events published in the last hour.
type DeliveryDelay struct {
	// Events is how many were measured (at most DeliveryDelaySample).
	Events int           `json:"events"`
	P50    time.Duration `json:"p50_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
}

// ReadDeliveryDelay measures the delivery delay of the newest events
// published in the last hour (Events is 0 when none was).
func (s *Store) ReadDeliveryDelay(ctx context.Context) (DeliveryDelay, error) {
	d, err := s.events()
	if err != nil {
		return DeliveryDelay{}, err
	}
	delays, err := d.ReadDeliveryDelays(ctx, s.db, time.Hour, DeliveryDelaySample)
	if err != nil {
		return DeliveryDelay{}, fmt.Errorf("delivery delay: %w", err)
	}
	if len(delays) == 0 {
		return DeliveryDelay{}, nil
	}
	slices.Sort(delays)
	at := func(q float64) time.Duration { return delays[min(len(delays)-1, int(q*float64(len(delays))))] }
	return DeliveryDelay{Events: len(delays), P50: at(0.50), P99: at(0.99), Max: delays[len(delays)-1]}, nil
}

// Text says the delay in `herald status`'s words ("" when nothing was
// published in the last hour).
func (d DeliveryDelay) Text() string {
	if d.Events == 0 {
		return ""
	}
	round := func(d time.Duration) string {
		if d < time.Second {
			return d.Round(time.Millisecond).String()
		}
		return d.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("delivery delay p50 %s, p99 %s (newest %d)", round(d.P50), round(d.P99), d.Events)
}
