package mysql

import (
	"context"
	"strings"

	"github.com/herald-outbox/herald/store"
)

// ReplayPage implements store.OperationsDialect, walking uq_aggregate_seq.
func (Dialect) ReplayPage(ctx context.Context, q store.Querier, w store.ReplayWindow) ([]store.Event, error) {
	// "After pos" spelled out: MariaDB scans the whole index for a row
	// comparison (a, b, c) > (x, y, z), but ranges over this OR.
	pos := w.After
	where := []string{"published_at IS NOT NULL", "id >= ?", "id < ?",
		"(aggregate_type > ? OR (aggregate_type = ? AND (aggregate_id > ? OR (aggregate_id = ? AND aggregate_seq > ?))))"}
	args := []any{w.MinID, w.MaxID, pos.AggregateType, pos.AggregateType,
		pos.AggregateID, pos.AggregateID, pos.AggregateSeq}
	for _, m := range w.Matches {
		where = append(where, m.Column+" = ?")
		args = append(args, m.Value)
	}
	if !w.Watermark.IsZero() {
		// A change stream's untouched rows below its watermark are
		// published (docs/design.md, invariant S2); the placeholder comes
		// first in the statement.
		where[0] = "(published_at IS NOT NULL OR next_attempt_at < ? AND " + untouched + ")"
		args = append([]any{datetime(w.Watermark)}, args...)
	}
	args = append(args, w.Limit)
	return store.ScanReplayEvents(q.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, fields, occurred_at
		FROM outbox_events FORCE INDEX (uq_aggregate_seq)
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT ?`, args...))
}

// LoadReplayCheckpoint implements store.OperationsDialect.
func (Dialect) LoadReplayCheckpoint(ctx context.Context, q store.Querier, name string) (store.ReplayCheckpoint, bool, error) {
	return store.ScanReplayCheckpoint(q.QueryRowContext(ctx, `SELECT selection, position_type, position_id, position_seq,
		replayed, finished_at FROM herald_replay_checkpoints WHERE name = ?`, name), name)
}

// SaveReplayCheckpoint implements store.OperationsDialect.
func (Dialect) SaveReplayCheckpoint(ctx context.Context, q store.Querier, cp store.ReplayCheckpoint, selection []byte, finished bool) error {
	_, err := q.ExecContext(ctx, `INSERT INTO herald_replay_checkpoints
		(name, selection, position_type, position_id, position_seq, replayed, finished_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, IF(?, UTC_TIMESTAMP(6), NULL), UTC_TIMESTAMP(6))
		ON DUPLICATE KEY UPDATE position_type = VALUES(position_type), position_id = VALUES(position_id),
		  position_seq = VALUES(position_seq), replayed = VALUES(replayed), finished_at = VALUES(finished_at),
		  updated_at = VALUES(updated_at)`,
		cp.Name, string(selection), cp.Position.AggregateType, cp.Position.AggregateID, cp.Position.AggregateSeq,
		cp.Replayed, finished)
	return err
}
