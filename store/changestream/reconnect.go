package changestream

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/herald-outbox/herald/backoff"
)

// Reconnector paces a reader's reconnections after a lost connection: the
// first attempt at once, each next one after a backoff that doubles from
// ReconnectBackoffBase up to ReconnectBackoffCap, until the stream makes
// progress again. It is used from the goroutine that reads the stream.
type Reconnector struct {
	cfg Config
	// name prefixes the logs ("binlog", "wal").
	name string
	// attempts counts connection attempts since the stream last made
	// progress.
	attempts int
}

// NewReconnector returns the Reconnector of a reader with cfg (defaults
// applied), logging as name.
func NewReconnector(cfg Config, name string) *Reconnector {
	return &Reconnector{cfg: cfg, name: name}
}

// Lost logs that the stream's connection was lost, err saying why; the
// reader reconnects from position.
func (r *Reconnector) Lost(err error, position string) {
	r.cfg.Logger.Warn(r.name+": stream lost; reconnecting", slog.String("error", err.Error()),
		slog.String("position", position))
}

// Progressed records that the stream read a transaction or a heartbeat:
// the next lost connection is retried at once.
func (r *Reconnector) Progressed() { r.attempts = 0 }

// Reconnect calls connect until it succeeds, waiting out the backoff
// before every attempt but the first since the stream progressed. It
// returns nil once connected, ctx's error once ctx ends, and the error
// permanent returns for a failure that retrying cannot fix (nil: try
// again); the other failures are logged.
func (r *Reconnector) Reconnect(ctx context.Context, position string, connect func(context.Context) error,
	permanent func(error) error) error {
	for {
		if r.attempts > 0 {
			t := time.NewTimer(backoff.Delay(r.attempts-1, r.cfg.ReconnectBackoffBase, r.cfg.ReconnectBackoffCap, rand.Float64()))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		r.attempts++
		err := connect(ctx)
		switch {
		case err == nil:
			r.cfg.Logger.Info(r.name+": stream reconnected", slog.String("position", position),
				slog.Int("attempt", r.attempts))
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		if err := permanent(err); err != nil {
			return err
		}
		r.cfg.Logger.Warn(r.name+": reconnection failed", slog.String("error", err.Error()),
			slog.Int("attempt", r.attempts), slog.String("position", position))
	}
}
