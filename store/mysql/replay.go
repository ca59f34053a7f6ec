package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
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

// ReplayPage returns up to limit published events of sel after pos, in
// aggregate order.
func (s *Store) ReplayPage(ctx context.Context, sel ReplaySelection, pos ReplayPosition, limit int) ([]store.Event, error) {
	// "After pos" spelled out: MariaDB scans the whole index for a row
	// comparison (a, b, c) > (x, y, z), but ranges over this OR.
	where := []string{"published_at IS NOT NULL", "id >= ?", "id < ?",
		"(aggregate_type > ? OR (aggregate_type = ? AND (aggregate_id > ? OR (aggregate_id = ? AND aggregate_seq > ?))))"}
	args := []any{uuidFloor(sel.From), uuidFloor(sel.To), pos.AggregateType, pos.AggregateType,
		pos.AggregateID, pos.AggregateID, pos.AggregateSeq}
	if sel.AggregateType != "" {
		where = append(where, "aggregate_type = ?")
		args = append(args, sel.AggregateType)
	}
	if sel.AggregateID != "" {
		where = append(where, "aggregate_id = ?")
		args = append(args, sel.AggregateID)
	}
	if sel.EventType != "" {
		where = append(where, "event_type = ?")
		args = append(args, sel.EventType)
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, occurred_at
		FROM outbox_events FORCE INDEX (uq_aggregate_seq)
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("replay page: %w", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var headers sql.NullString
		if err := rows.Scan(&e.ID, &e.AggregateType, &e.AggregateID, &e.AggregateSeq, &e.EventType,
			&e.SchemaVersion, &e.Payload, &headers, &e.OccurredAt); err != nil {
			return nil, fmt.Errorf("replay page: %w", err)
		}
		if headers.Valid {
			if err := json.Unmarshal([]byte(headers.String), &e.Headers); err != nil {
				return nil, fmt.Errorf("replay page: event %s headers: %w", e.ID, err)
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// uuidFloor is the smallest UUIDv7 of t's millisecond, as text: UUIDv7s sort
// by time as strings.
func uuidFloor(t time.Time) string {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

// ReplayCheckpoint is a replay's saved progress.
type ReplayCheckpoint struct {
	Name      string
	Selection ReplaySelection
	Position  ReplayPosition
	Replayed  int64
	Finished  bool
}

// ErrCheckpointMismatch: a checkpoint name is reused for another selection.
var ErrCheckpointMismatch = errors.New("checkpoint belongs to a different selection")

// LoadReplayCheckpoint returns the checkpoint called name, or a fresh one
// for sel when there is none. A checkpoint saved for another selection is
// refused; with savedRange, its time range is taken as it was saved (the
// caller gave the range relative to "now", which moved since), and only the
// filters must match.
func (s *Store) LoadReplayCheckpoint(ctx context.Context, name string, sel ReplaySelection, savedRange bool) (ReplayCheckpoint, error) {
	cp := ReplayCheckpoint{Name: name, Selection: sel}
	var selJSON, posType, posID string
	var posSeq uint64
	var finished sql.NullTime
	err := s.db.QueryRowContext(ctx, `SELECT selection, position_type, position_id, position_seq, replayed, finished_at
		FROM herald_replay_checkpoints WHERE name = ?`, name).
		Scan(&selJSON, &posType, &posID, &posSeq, &cp.Replayed, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, nil
	}
	if err != nil {
		return cp, fmt.Errorf("load replay checkpoint %s: %w", name, err)
	}
	var saved ReplaySelection
	if err := json.Unmarshal([]byte(selJSON), &saved); err != nil {
		return cp, fmt.Errorf("load replay checkpoint %s: %w", name, err)
	}
	if savedRange {
		sel.From, sel.To = saved.From, saved.To
		cp.Selection = sel
	}
	if !sameSelection(saved, sel) {
		return cp, fmt.Errorf("%w: %q was saved for %s", ErrCheckpointMismatch, name, selJSON)
	}
	cp.Position = ReplayPosition{AggregateType: posType, AggregateID: posID, AggregateSeq: posSeq}
	cp.Finished = finished.Valid
	return cp, nil
}

func sameSelection(a, b ReplaySelection) bool {
	return a.From.Equal(b.From) && a.To.Equal(b.To) && a.AggregateType == b.AggregateType &&
		a.AggregateID == b.AggregateID && a.EventType == b.EventType
}

// SaveReplayCheckpoint records progress; finished marks the replay done.
func (s *Store) SaveReplayCheckpoint(ctx context.Context, cp ReplayCheckpoint, finished bool) error {
	sel, err := json.Marshal(cp.Selection)
	if err != nil {
		return err
	}
	var finishedAt any
	if finished {
		finishedAt = time.Now().UTC()
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO herald_replay_checkpoints
		(name, selection, position_type, position_id, position_seq, replayed, finished_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, NOW(6))
		ON DUPLICATE KEY UPDATE position_type = VALUES(position_type), position_id = VALUES(position_id),
		  position_seq = VALUES(position_seq), replayed = VALUES(replayed), finished_at = VALUES(finished_at),
		  updated_at = VALUES(updated_at)`,
		cp.Name, string(sel), cp.Position.AggregateType, cp.Position.AggregateID, cp.Position.AggregateSeq,
		cp.Replayed, finishedAt)
	if err != nil {
		return fmt.Errorf("save replay checkpoint %s: %w", cp.Name, err)
	}
	return nil
}
