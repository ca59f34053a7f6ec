package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
)

// ReplayPage implements store.OperationsDialect, walking uq_aggregate_seq.
// PostgreSQL compares rows natively, so "after pos" is one row comparison
// the index scan starts from.
func (Dialect) ReplayPage(ctx context.Context, q store.Querier, sel store.ReplaySelection, pos store.ReplayPosition, limit int, watermark time.Time) ([]store.Event, error) {
	where := []string{"published_at IS NOT NULL", "id >= $1", "id < $2",
		"(aggregate_type, aggregate_id, aggregate_seq) > ($3, $4, $5)"}
	args := []any{uuidFloor(sel.From), uuidFloor(sel.To), pos.AggregateType, pos.AggregateID, int64(pos.AggregateSeq)}
	add := func(column, v string) {
		args = append(args, v)
		where = append(where, column+" = $"+strconv.Itoa(len(args)))
	}
	if sel.AggregateType != "" {
		add("aggregate_type", sel.AggregateType)
	}
	if sel.AggregateID != "" {
		add("aggregate_id", sel.AggregateID)
	}
	if sel.EventType != "" {
		add("event_type", sel.EventType)
	}
	if !watermark.IsZero() {
		// A change stream's untouched rows below its watermark are
		// published (docs/design.md, invariant S2).
		args = append(args, watermark.UTC())
		where[0] = "(published_at IS NOT NULL OR next_attempt_at < $" + strconv.Itoa(len(args)) + "::timestamptz AND " +
			untouched("outbox_events") + ")"
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, fields, occurred_at
		FROM outbox_events
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT $`+strconv.Itoa(len(args)), args...)
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
		e.OccurredAt = occurred.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// uuidFloor is the smallest UUIDv7 of t's millisecond: UUIDv7s sort by
// time, as uuid values as well as text.
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
	var selJSON []byte
	var finished sql.NullTime
	err := q.QueryRowContext(ctx, `SELECT selection, position_type, position_id, position_seq, replayed, finished_at
		FROM herald_replay_checkpoints WHERE name = $1`, name).
		Scan(&selJSON, &cp.Position.AggregateType, &cp.Position.AggregateID, &cp.Position.AggregateSeq, &cp.Replayed, &finished)
	if errors.Is(err, sql.ErrNoRows) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, err
	}
	if err := json.Unmarshal(selJSON, &cp.Selection); err != nil {
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
		VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN statement_timestamp() END, statement_timestamp())
		ON CONFLICT (name) DO UPDATE SET position_type = EXCLUDED.position_type, position_id = EXCLUDED.position_id,
		  position_seq = EXCLUDED.position_seq, replayed = EXCLUDED.replayed, finished_at = EXCLUDED.finished_at,
		  updated_at = EXCLUDED.updated_at`,
		cp.Name, string(sel), cp.Position.AggregateType, cp.Position.AggregateID, int64(cp.Position.AggregateSeq),
		cp.Replayed, finished)
	return err
}
