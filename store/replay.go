package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ReplaySelection chooses the published events a replay re-publishes.
type ReplaySelection struct {
	// From and To bound when events were added to the outbox (the time in
	// their UUIDv7 id, which the writer takes when it adds them), From
	// included, To excluded. Required.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Optional filters.
	AggregateType string `json:"aggregate_type,omitempty"`
	AggregateID   string `json:"aggregate_id,omitempty"`
	EventType     string `json:"event_type,omitempty"`
}

// Validate checks a selection.
func (s ReplaySelection) Validate() error {
	switch {
	case s.From.IsZero() || s.To.IsZero():
		return errors.New("replay: both ends of the time range are required")
	case !s.From.Before(s.To):
		return fmt.Errorf("replay: from (%s) must be before to (%s)", s.From.Format(time.RFC3339), s.To.Format(time.RFC3339))
	case s.AggregateID != "" && s.AggregateType == "":
		return errors.New("replay: an aggregate id needs its aggregate type")
	}
	return nil
}

// Match is an equality a read narrows its rows to: Column = Value, the
// column named as in outbox_events.
type Match struct {
	Column string
	Value  string
}

// Matches returns the selection's filters that are set, in a fixed order.
func (s ReplaySelection) Matches() []Match {
	return matches("aggregate_type", s.AggregateType, "aggregate_id", s.AggregateID, "event_type", s.EventType)
}

// matches returns the (column, value) pairs of kv whose value is set.
func matches(kv ...string) []Match {
	var out []Match
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			out = append(out, Match{Column: kv[i], Value: kv[i+1]})
		}
	}
	return out
}

// ReplayWindow asks a dialect for a page of a replay.
type ReplayWindow struct {
	// MinID and MaxID bound the ids, MinID included: the selection's time
	// range (UUIDv7 ids sort by when they were added).
	MinID, MaxID string
	// Matches are the selection's filters.
	Matches []Match
	// After is the position the page starts after.
	After ReplayPosition
	// Watermark, when set, is a change stream's: the untouched rows before
	// it are published (invariant S2) and replayed with the rest.
	Watermark time.Time
	// Limit is the most events the page holds.
	Limit int
}

// ReplayPosition is where a replay stands: the last event it re-published,
// in (aggregate_type, aggregate_id, aggregate_seq) order, which keeps every
// aggregate's events in their original order.
type ReplayPosition struct {
	AggregateType string `json:"aggregate_type"`
	AggregateID   string `json:"aggregate_id"`
	AggregateSeq  uint64 `json:"aggregate_seq"`
}

// ReplayCheckpoint is a replay's saved progress.
type ReplayCheckpoint struct {
	Name      string
	Selection ReplaySelection
	Position  ReplayPosition
	Replayed  int64
	Finished  bool
}

// CheckpointNameMaxChars is the longest replay checkpoint name (the
// schema's herald_replay_checkpoints.name).
const CheckpointNameMaxChars = 128

// ValidateCheckpointName checks a replay checkpoint's name before anything
// is published under it: not blank, valid UTF-8 without control
// characters, at most CheckpointNameMaxChars characters.
func ValidateCheckpointName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("a name is required (it makes the replay resumable)")
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("%q contains a control character", name)
	case utf8.RuneCountInString(name) > CheckpointNameMaxChars:
		return fmt.Errorf("%d characters, at most %d", utf8.RuneCountInString(name), CheckpointNameMaxChars)
	}
	return nil
}

// ErrCheckpointMismatch: a checkpoint name is reused for another selection.
var ErrCheckpointMismatch = errors.New("checkpoint belongs to a different selection")

// ReplayPage returns up to limit published events of sel after pos, in
// aggregate order.
func (s *Store) ReplayPage(ctx context.Context, sel ReplaySelection, pos ReplayPosition, limit int) ([]Event, error) {
	watermark, err := s.watermark(ctx)
	if err != nil {
		return nil, fmt.Errorf("replay page: %w", err)
	}
	page, err := s.dialect.ReplayPage(ctx, s.db, ReplayWindow{
		MinID: uuidFloor(sel.From), MaxID: uuidFloor(sel.To), Matches: sel.Matches(),
		After: pos, Watermark: watermark, Limit: limit,
	})
	if err != nil {
		return nil, fmt.Errorf("replay page: %w", err)
	}
	return page, nil
}

// LoadReplayCheckpoint returns the checkpoint called name, or a fresh one
// for sel when there is none. A checkpoint saved for another selection is
// refused; with savedRange, its time range is taken as it was saved (the
// caller gave the range relative to "now", which moved since), and only the
// filters must match.
func (s *Store) LoadReplayCheckpoint(ctx context.Context, name string, sel ReplaySelection, savedRange bool) (ReplayCheckpoint, error) {
	saved, found, err := s.dialect.LoadReplayCheckpoint(ctx, s.db, name)
	if err != nil {
		return ReplayCheckpoint{}, fmt.Errorf("load replay checkpoint %s: %w", name, err)
	}
	if !found {
		return ReplayCheckpoint{Name: name, Selection: sel}, nil
	}
	if savedRange {
		sel.From, sel.To = saved.Selection.From, saved.Selection.To
	}
	if !sameSelection(saved.Selection, sel) {
		return ReplayCheckpoint{}, fmt.Errorf("%w: %q was saved for %s", ErrCheckpointMismatch, name, describeSelection(saved.Selection))
	}
	saved.Selection = sel
	return saved, nil
}

// SaveReplayCheckpoint records progress; finished marks the replay done.
func (s *Store) SaveReplayCheckpoint(ctx context.Context, cp ReplayCheckpoint, finished bool) error {
	selection, err := json.Marshal(cp.Selection)
	if err != nil {
		return fmt.Errorf("save replay checkpoint %s: %w", cp.Name, err)
	}
	if err := s.dialect.SaveReplayCheckpoint(ctx, s.db, cp, selection, finished); err != nil {
		return fmt.Errorf("save replay checkpoint %s: %w", cp.Name, err)
	}
	return nil
}

func sameSelection(a, b ReplaySelection) bool {
	return a.From.Equal(b.From) && a.To.Equal(b.To) && a.AggregateType == b.AggregateType &&
		a.AggregateID == b.AggregateID && a.EventType == b.EventType
}

func describeSelection(s ReplaySelection) string {
	d := fmt.Sprintf("from %s to %s", s.From.UTC().Format(time.RFC3339Nano), s.To.UTC().Format(time.RFC3339Nano))
	for _, f := range []struct{ name, value string }{
		{"aggregate type", s.AggregateType}, {"aggregate id", s.AggregateID}, {"event type", s.EventType},
	} {
		if f.value != "" {
			d += fmt.Sprintf(", %s %q", f.name, f.value)
		}
	}
	return d
}
