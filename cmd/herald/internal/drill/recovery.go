package drill

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/verify"
)

// recoveryResult is when the pipeline had caught up with the fault.
type recoveryResult struct {
	at   time.Time
	what string
	err  error
}

// trackRecovery measures how long after the fault the pipeline caught up
// with it: every event committed by the end of the fault is published,
// then the consumer group has committed offsets up to where the topic
// ended at that moment (the lag the fault left is 0), every such event is
// in the inbox and no warehouse call of them is pending.
func (r *drillRun) trackRecovery(ctx context.Context) recoveryResult {
	p := r.pipeline
	deadline := time.Now().Add(r.cfg.Timeout + 30*time.Second)
	var ids []any
	for ids == nil {
		got, err := queryStrings(ctx, p.ordersDB, "SELECT id FROM outbox_events")
		if err == nil {
			ids = make([]any, len(got))
			for i, id := range got {
				ids[i] = id
			}
		}
		if time.Now().After(deadline) {
			return recoveryResult{err: fmt.Errorf("outbox unreadable: %v", err)}
		}
		if err != nil {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if len(ids) == 0 {
		return recoveryResult{at: time.Now(), what: "no event committed"}
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")"
	var ends map[int32]int64
	for {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return recoveryResult{err: fmt.Errorf("%d events committed by the end of the fault not through the pipeline in time", len(ids))}
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		done := func() bool {
			defer cancel()
			if ends == nil {
				var unpublished int
				if err := p.ordersDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM outbox_events WHERE NOT "+verify.PublishedSQL+" AND id IN "+in), ids...).Scan(&unpublished); err != nil || unpublished > 0 {
					return false
				}
				offs, err := kafka.EndOffsets(qctx, p.adm, p.topic)
				if err != nil {
					return false
				}
				ends = map[int32]int64{}
				for _, o := range offs {
					ends[o.Partition] = o.End
				}
			}
			_, lags, err := kafka.GroupLag(qctx, p.adm, p.group, p.topic)
			if err != nil {
				return false
			}
			for _, l := range lags {
				if l.Committed < ends[l.Partition] && ends[l.Partition] > 0 {
					return false
				}
			}
			var consumed, pending int
			if err := p.invDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM consumed_events WHERE consumer_name = ? AND event_id IN "+in),
				append([]any{ConsumerName}, ids...)...).Scan(&consumed); err != nil || consumed < len(ids) {
				return false
			}
			if err := p.invDB.QueryRowContext(qctx, p.sql("SELECT COUNT(*) FROM warehouse_calls WHERE status <> 'done' AND idempotency_key IN "+in), ids...).Scan(&pending); err != nil || pending > 0 {
				return false
			}
			return true
		}()
		if done {
			return recoveryResult{at: time.Now(), what: fmt.Sprintf("the %d events committed by then are published, consumed (offsets committed) and called", len(ids))}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitDrained polls until the pipeline has nothing left to do.
func (r *drillRun) waitDrained(ctx context.Context) (pipelineState, error) {
	var st pipelineState
	for {
		st = r.readState(ctx)
		if st.drained() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return r.readState(context.WithoutCancel(ctx)), ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// queryStrings runs a one-column query.
func queryStrings(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
