package mysql

import (
	"context"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

var _ store.EventsDialect = Dialect{}

// eventRowColumns are the columns of an operator's row, without payload
// and headers, as store.ScanEventRows reads them.
var eventRowColumns = `id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
	attempts, COALESCE(error_class, ''), COALESCE(last_error, ''), occurred_at, quarantined_at, published_at,
	discarded_at, ` + finiteOrNull("next_attempt_at")

// ReadEventWindow implements store.EventsDialect, walking the primary key
// backwards.
func (Dialect) ReadEventWindow(ctx context.Context, q store.Querier, w store.EventWindow) ([]store.EventRow, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if w.Before != "" {
		add("id < ?", w.Before)
	}
	if w.MinID != "" {
		add("id >= ?", w.MinID)
	}
	if w.MaxID != "" {
		add("id < ?", w.MaxID)
	}
	query := `SELECT ` + eventRowColumns + ` FROM outbox_events FORCE INDEX (PRIMARY)`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, w.Limit)
	return store.ScanEventRows(q.QueryContext(ctx, query+` ORDER BY id DESC LIMIT ?`, args...))
}

// ReadAggregateWindow implements store.EventsDialect.
func (Dialect) ReadAggregateWindow(ctx context.Context, q store.Querier, w store.AggregateWindow) ([]store.EventRow, error) {
	return store.ScanEventRows(q.QueryContext(ctx, `SELECT `+eventRowColumns+`
		FROM outbox_events FORCE INDEX (uq_aggregate_seq)
		WHERE aggregate_type = ? AND aggregate_id = ? AND aggregate_seq > ?
		ORDER BY aggregate_seq LIMIT ?`, w.Key.AggregateType, w.Key.AggregateID, w.AfterSeq, w.Limit))
}

// ReadAuditLog implements store.EventsDialect, walking the primary key
// backwards.
func (Dialect) ReadAuditLog(ctx context.Context, q store.Querier, beforeID int64, limit int) ([]store.AuditEntry, error) {
	query, args := `SELECT id, at, actor, action, COALESCE(event_id, ''), COALESCE(reason, ''), details FROM outbox_audit`, []any{}
	if beforeID > 0 {
		query += ` WHERE id < ?`
		args = append(args, beforeID)
	}
	return store.ScanAuditEntries(q.QueryContext(ctx, query+` ORDER BY id DESC LIMIT ?`, append(args, limit)...))
}

// ListReplayCheckpoints implements store.EventsDialect. The table holds a
// row per replay ever run: small, read whole.
func (Dialect) ListReplayCheckpoints(ctx context.Context, q store.Querier, limit int) ([]store.ReplayProgress, error) {
	return store.ScanReplayProgress(q.QueryContext(ctx, `SELECT name, selection, replayed, finished_at IS NOT NULL, updated_at
		FROM herald_replay_checkpoints ORDER BY updated_at DESC, name LIMIT ?`, limit))
}

// ReadDeliveryDelays implements store.EventsDialect: a backward walk of
// idx_ready's published range, covered by it (published_at and
// occurred_at are its columns).
func (Dialect) ReadDeliveryDelays(ctx context.Context, q store.Querier, window time.Duration, limit int) ([]time.Duration, error) {
	return store.ScanDelays(q.QueryContext(ctx, `SELECT TIMESTAMPDIFF(MICROSECOND, occurred_at, published_at)
		FROM outbox_events FORCE INDEX (idx_ready)
		WHERE published_at > UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
		ORDER BY published_at DESC LIMIT ?`, window.Microseconds(), limit))
}
