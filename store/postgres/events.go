package postgres

import (
	"context"
	"fmt"
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
// backwards (uuid order is the text's order).
func (Dialect) ReadEventWindow(ctx context.Context, q store.Querier, w store.EventWindow) ([]store.EventRow, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if w.Before != "" {
		add("id < $%d::uuid", w.Before)
	}
	if w.MinID != "" {
		add("id >= $%d::uuid", w.MinID)
	}
	if w.MaxID != "" {
		add("id < $%d::uuid", w.MaxID)
	}
	query := `SELECT ` + eventRowColumns + ` FROM outbox_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, w.Limit)
	return store.ScanEventRows(q.QueryContext(ctx, query+fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args)), args...))
}

// ReadAggregateWindow implements store.EventsDialect.
func (Dialect) ReadAggregateWindow(ctx context.Context, q store.Querier, w store.AggregateWindow) ([]store.EventRow, error) {
	return store.ScanEventRows(q.QueryContext(ctx, `SELECT `+eventRowColumns+`
		FROM outbox_events
		WHERE aggregate_type = $1 AND aggregate_id = $2 AND aggregate_seq > $3
		ORDER BY aggregate_type, aggregate_id, aggregate_seq LIMIT $4`,
		w.Key.AggregateType, w.Key.AggregateID, int64(w.AfterSeq), w.Limit))
}

// ReadAuditLog implements store.EventsDialect, walking the primary key
// backwards.
func (Dialect) ReadAuditLog(ctx context.Context, q store.Querier, beforeID int64, limit int) ([]store.AuditEntry, error) {
	query, args := `SELECT id, at, actor, action, COALESCE(event_id::text, ''), COALESCE(reason, ''), details FROM outbox_audit`, []any{}
	if beforeID > 0 {
		query += ` WHERE id < $1`
		args = append(args, beforeID)
	}
	args = append(args, limit)
	return store.ScanAuditEntries(q.QueryContext(ctx, query+fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args)), args...))
}

// ListReplayCheckpoints implements store.EventsDialect. The table holds a
// row per replay ever run: small, read whole.
func (Dialect) ListReplayCheckpoints(ctx context.Context, q store.Querier, limit int) ([]store.ReplayProgress, error) {
	return store.ScanReplayProgress(q.QueryContext(ctx, `SELECT name, selection, replayed, finished_at IS NOT NULL, updated_at
		FROM herald_replay_checkpoints ORDER BY updated_at DESC, name LIMIT $1`, limit))
}

// ReadDeliveryDelays implements store.EventsDialect: a backward walk of
// idx_ready's published range (published_at and occurred_at are its
// columns).
func (Dialect) ReadDeliveryDelays(ctx context.Context, q store.Querier, window time.Duration, limit int) ([]time.Duration, error) {
	return store.ScanDelays(q.QueryContext(ctx, `SELECT (extract(epoch FROM published_at - occurred_at) * 1000000)::bigint
		FROM outbox_events
		WHERE published_at > statement_timestamp() - make_interval(secs => $1)
		ORDER BY published_at DESC LIMIT $2`, window.Seconds(), limit))
}
