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

// ReplayPage implements store.OperationsDialect, walking uq_aggregate_seq.
func (Dialect) ReplayPage(ctx context.Context, q store.Querier, sel store.ReplaySelection, pos store.ReplayPosition, limit int, watermark time.Time) ([]store.Event, error) {
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
	if !watermark.IsZero() {
		// A change stream's untouched rows below its watermark are
		// published (docs/design.md, invariant S2); the placeholder comes
		// first in the statement.
		where[0] = "(published_at IS NOT NULL OR next_attempt_at < ? AND " + untouched + ")"
		args = append([]any{datetime(watermark)}, args...)
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, fields, occurred_at
		FROM outbox_events FORCE INDEX (uq_aggregate_seq)
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var raw store.RawEvent
		var occurred time.Time
		if err := rows.Scan(&raw.ID, &raw.AggregateType, &raw.AggregateID, &raw.AggregateSeq, &raw.EventType,
			&raw.SchemaVersion, &raw.Payload, &raw.Headers, &raw.Fields, &occurred); err != nil {
			return nil, err
		}
		e := raw.Decode()
		if e.Defect != nil {
			return nil, fmt.Errorf("event %s: %w", e.ID, e.Defect)
		}
		e.OccurredAt = occurred
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

// LoadReplayCheckpoint implements store.OperationsDialect.
func (Dialect) LoadReplayCheckpoint(ctx context.Context, q store.Querier, name string) (store.ReplayCheckpoint, bool, error) {
	cp := store.ReplayCheckpoint{Name: name}
	var selJSON string
	var finished sql.NullTime
	err := q.QueryRowContext(ctx, `SELECT selection, position_type, position_id, position_seq, replayed, finished_at
		FROM herald_replay_checkpoints WHERE name = ?`, name).
		Scan(&selJSON, &cp.Position.AggregateType, &cp.Position.AggregateID, &cp.Position.AggregateSeq, &cp.Replayed, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, err
	}
	if err := json.Unmarshal([]byte(selJSON), &cp.Selection); err != nil {
		return cp, false, fmt.Errorf("selection: %w", err)
	}
	cp.Finished = finished.Valid
	return cp, true, nil
}

// SaveReplayCheckpoint implements store.OperationsDialect.
func (Dialect) SaveReplayCheckpoint(ctx context.Context, q store.Querier, cp store.ReplayCheckpoint, finished bool) error {
	sel, err := json.Marshal(cp.Selection)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO herald_replay_checkpoints
		(name, selection, position_type, position_id, position_seq, replayed, finished_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, IF(?, UTC_TIMESTAMP(6), NULL), UTC_TIMESTAMP(6))
		ON DUPLICATE KEY UPDATE position_type = VALUES(position_type), position_id = VALUES(position_id),
		  position_seq = VALUES(position_seq), replayed = VALUES(replayed), finished_at = VALUES(finished_at),
		  updated_at = VALUES(updated_at)`,
		cp.Name, string(sel), cp.Position.AggregateType, cp.Position.AggregateID, cp.Position.AggregateSeq,
		cp.Replayed, finished)
	return err
}
