package store

import (
	"context"
	"fmt"
	"time"
)

// CountUnpublished counts the events that are not published yet: neither
// marked nor, untouched below a change stream's watermark, published by
// it (docs/design.md, section 9.4), nor discarded. Quarantined, held and
// backing-off events count, and so do a stream's untouched rows at or
// after its watermark (published or on their way: the watermark passes
// them within seconds once the stream has).
func (s *Store) CountUnpublished(ctx context.Context) (int64, error) {
	watermark, err := s.watermark(ctx)
	if err != nil {
		return 0, fmt.Errorf("count unpublished: %w", err)
	}
	n, err := s.dialect.CountUnpublished(ctx, s.db, watermark)
	if err != nil {
		return 0, fmt.Errorf("count unpublished: %w", err)
	}
	return n, nil
}

// watermark reads the change stream's watermark (zero without one): the
// untouched rows before it are published (docs/design.md, section 9.3).
func (s *Store) watermark(ctx context.Context) (time.Time, error) {
	stream, _, err := s.dialect.ReadStream(ctx, s.db)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the stream's watermark: %w", err)
	}
	return stream.Watermark, nil
}
