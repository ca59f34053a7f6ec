package metrics

import "context"

// SampleBacklog reads the backlog once, as Run does every interval.
func SampleBacklog(ctx context.Context, b *Backlog) { b.runOnce(ctx) }
