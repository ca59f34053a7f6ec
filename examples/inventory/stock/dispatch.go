package stock

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/herald-outbox/herald/backoff"
	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// callTimeout bounds one warehouse call; queryTimeout one statement.
const (
	callTimeout  = 5 * time.Second
	queryTimeout = 10 * time.Second
	sweepBatch   = 100
)

// pendingCall is a warehouse_calls row still to be made.
type pendingCall struct {
	id       int64
	key      string
	body     []byte
	attempts int
}

// dispatcher makes the warehouse calls the reservations queued: at once
// for the keys the consumer hands over after its commit, and from a sweep
// of calls still pending (left by a crash, or failed and due again). It
// never runs inside the consumer's transaction.
type dispatcher struct {
	db           *sql.DB
	dialect      store.Dialect
	client       *http.Client
	url          string // POST target
	log          *slog.Logger
	interval     time.Duration
	grace        time.Duration
	backoff      time.Duration
	backoffLimit time.Duration

	keys       chan string
	beforeCall func() // Config.BeforeWarehouseCall

	done    atomic.Int64
	failed  atomic.Int64
	retries atomic.Int64
}

// notify hands over the idempotency keys of calls just committed. It never
// blocks: a full queue leaves the call to the sweeper.
func (d *dispatcher) notify(keys []string) {
	for _, k := range keys {
		select {
		case d.keys <- k:
		default:
		}
	}
}

// run calls and sweeps until ctx is cancelled; a call in flight is
// finished first.
func (d *dispatcher) run(ctx context.Context) {
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	d.sweep(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-d.keys:
			keys := []string{k}
		drain:
			for len(keys) < sweepBatch {
				select {
				case k := <-d.keys:
					keys = append(keys, k)
				default:
					break drain
				}
			}
			d.callKeys(ctx, keys)
		case <-tick.C:
			d.sweep(ctx)
		}
	}
}

// callKeys makes the pending calls with these keys.
func (d *dispatcher) callKeys(ctx context.Context, keys []string) {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	d.callQuery(ctx, "SELECT id, idempotency_key, body, attempts FROM warehouse_calls WHERE status = 'pending' AND idempotency_key IN ("+
		strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",")+") ORDER BY id", args...)
}

// sweep makes the pending calls that are due and older than the grace
// period (younger ones are the business of the dispatcher that queued
// them, which may be in another process).
func (d *dispatcher) sweep(ctx context.Context) {
	d.callQuery(ctx, "SELECT id, idempotency_key, body, attempts FROM warehouse_calls "+
		"WHERE status = 'pending' AND next_attempt_at <= CURRENT_TIMESTAMP(6) AND created_at <= CURRENT_TIMESTAMP(6) - "+
		database.Microseconds(d.dialect)+" ORDER BY id LIMIT ?",
		d.grace.Microseconds(), sweepBatch)
}

func (d *dispatcher) callQuery(ctx context.Context, query string, args ...any) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	rows, err := d.db.QueryContext(qctx, database.Rebind(d.dialect, query), args...)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("read pending warehouse calls", "error", err)
		}
		return
	}
	var calls []pendingCall
	for rows.Next() {
		var c pendingCall
		if err := rows.Scan(&c.id, &c.key, &c.body, &c.attempts); err != nil {
			d.log.Warn("read pending warehouse calls", "error", err)
			break
		}
		calls = append(calls, c)
	}
	rows.Close()
	for _, c := range calls {
		if ctx.Err() != nil {
			return
		}
		d.call(context.WithoutCancel(ctx), c)
	}
}

// call makes one warehouse call and records its outcome. The event id is
// the Idempotency-Key: however often this runs for one row, the warehouse
// applies it once.
func (d *dispatcher) call(ctx context.Context, c pendingCall) {
	if d.beforeCall != nil {
		d.beforeCall()
	}
	status, err := d.post(ctx, c)
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	switch {
	case err == nil && status >= 200 && status < 300:
		if _, err := d.db.ExecContext(qctx, database.Rebind(d.dialect,
			"UPDATE warehouse_calls SET status = 'done', done_at = CURRENT_TIMESTAMP(6), attempts = attempts + 1, last_error = NULL WHERE id = ? AND status = 'pending'"),
			c.id); err != nil {
			d.log.Warn("mark warehouse call done (it will be repeated; the warehouse replays it)", "event_id", c.key, "error", err)
			return
		}
		d.done.Add(1)
	case err == nil && status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout:
		// The warehouse refuses the request itself (422: the key was used
		// with another body): retrying cannot help; an operator must look.
		msg := fmt.Sprintf("warehouse answered %d", status)
		if _, err := d.db.ExecContext(qctx, database.Rebind(d.dialect,
			"UPDATE warehouse_calls SET status = 'failed', attempts = attempts + 1, last_error = ? WHERE id = ? AND status = 'pending'"),
			msg, c.id); err != nil {
			d.log.Warn("mark warehouse call failed", "event_id", c.key, "error", err)
		}
		d.failed.Add(1)
		d.log.Error("warehouse refused a call", "event_id", c.key, "status", status)
	default:
		msg := fmt.Sprintf("warehouse answered %d", status)
		if err != nil {
			msg = kafka.ScrubError(err.Error())
		}
		wait := backoff.Delay(c.attempts, d.backoff, d.backoffLimit, rand.Float64())
		if _, err := d.db.ExecContext(qctx, database.Rebind(d.dialect,
			"UPDATE warehouse_calls SET attempts = attempts + 1, last_error = ?, next_attempt_at = CURRENT_TIMESTAMP(6) + "+
				database.Microseconds(d.dialect)+" WHERE id = ? AND status = 'pending'"),
			msg, wait.Microseconds(), c.id); err != nil {
			d.log.Warn("record warehouse call failure", "event_id", c.key, "error", err)
		}
		d.retries.Add(1)
		d.log.Warn("warehouse call failed; retrying later", "event_id", c.key, "attempt", c.attempts+1, "retry_in", wait.String(), "error", msg)
	}
}

func (d *dispatcher) post(ctx context.Context, c pendingCall) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(c.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", c.key)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}
