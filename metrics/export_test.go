package metrics

import "context"

// SampleBacklog reads the backlog once, as Run does every interval.
func SampleBacklog(ctx context.Context, b *Backlog) { b.runOnce(ctx) }

// SampleLag reads the lag once, as Run does every interval.
func SampleLag(ctx context.Context, c *ConsumerLag) { c.runOnce(ctx) }
