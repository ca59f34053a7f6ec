package api

import "context"

// WithAfterBusinessInsert returns cfg with a hook that runs inside the create
// transaction between the order rows and the event.
func WithAfterBusinessInsert(cfg Config, hook func(ctx context.Context) error) Config {
	cfg.afterBusinessInsert = hook
	return cfg
}
