package changestream

import (
	"context"
	"log/slog"
	"time"
)

// PollLag calls poll every cfg.LagInterval, each call bounded by
// cfg.Timeout, until ctx ends; a reader runs it on a goroutine of its own
// after its first poll at Open, so Lag is known from the start. poll reads
// the server's head (head says what: "the server's binlog files") and
// records it for Lag, or records it unknown and returns why. A failing
// poll is logged once, as name, and once more when polls succeed again.
func PollLag(ctx context.Context, cfg Config, name, head string, poll func(context.Context) error) {
	t := time.NewTicker(cfg.LagInterval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		err := poll(pctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				cfg.Logger.Warn(name+": cannot read "+head+"; lag unknown", slog.String("error", err.Error()))
			}
			failing = true
		case failing:
			cfg.Logger.Info(name + ": reading " + head + " again")
			failing = false
		}
	}
}
