package store

import (
	"context"
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
	page, err := s.dialect.ReplayPage(ctx, s.db, sel, pos, limit, watermark)
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
	if err := s.dialect.SaveReplayCheckpoint(ctx, s.db, cp, finished); err != nil {
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
