package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/herald-outbox/herald/store"
)

// ReplayPage implements store.OperationsDialect, walking uq_aggregate_seq.
// PostgreSQL compares rows natively, so "after pos" is one row comparison
// the index scan starts from.
func (Dialect) ReplayPage(ctx context.Context, q store.Querier, w store.ReplayWindow) ([]store.Event, error) {
	where := []string{"published_at IS NOT NULL", "id >= $1", "id < $2",
		"(aggregate_type, aggregate_id, aggregate_seq) > ($3, $4, $5)"}
	args := []any{w.MinID, w.MaxID, w.After.AggregateType, w.After.AggregateID, int64(w.After.AggregateSeq)}
	for _, m := range w.Matches {
		args = append(args, m.Value)
		where = append(where, m.Column+" = $"+strconv.Itoa(len(args)))
	}
	if !w.Watermark.IsZero() {
		// A change stream's untouched rows below its watermark are
		// published (docs/design.md, invariant S2).
		args = append(args, w.Watermark.UTC())
		where[0] = "(published_at IS NOT NULL OR next_attempt_at < $" + strconv.Itoa(len(args)) + "::timestamptz AND " +
			untouched("outbox_events") + ")"
	}
	args = append(args, w.Limit)
	return store.ScanReplayEvents(q.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type,
		schema_version, payload, headers, fields, occurred_at
		FROM outbox_events
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT $`+strconv.Itoa(len(args)), args...))
}

// LoadReplayCheckpoint implements store.OperationsDialect.
func (Dialect) LoadReplayCheckpoint(ctx context.Context, q store.Querier, name string) (store.ReplayCheckpoint, bool, error) {
	return store.ScanReplayCheckpoint(q.QueryRowContext(ctx, `SELECT selection, position_type, position_id, position_seq,
		replayed, finished_at FROM herald_replay_checkpoints WHERE name = $1`, name), name)
}

// SaveReplayCheckpoint implements store.OperationsDialect.
func (Dialect) SaveReplayCheckpoint(ctx context.Context, q store.Querier, cp store.ReplayCheckpoint, selection []byte, finished bool) error {
	_, err := q.ExecContext(ctx, `INSERT INTO herald_replay_checkpoints
		(name, selection, position_type, position_id, position_seq, replayed, finished_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN statement_timestamp() END, statement_timestamp())
		ON CONFLICT (name) DO UPDATE SET position_type = EXCLUDED.position_type, position_id = EXCLUDED.position_id,
		  position_seq = EXCLUDED.position_seq, replayed = EXCLUDED.replayed, finished_at = EXCLUDED.finished_at,
		  updated_at = EXCLUDED.updated_at`,
		cp.Name, string(selection), cp.Position.AggregateType, cp.Position.AggregateID, int64(cp.Position.AggregateSeq),
		cp.Replayed, finished)
	return err
}
