-- As migrations/sql/00007_stream_watermark.sql (docs/design.md, sections
-- 9.2-9.4): the change stream's watermark, and the rows in the polling
-- path's hands (unpublished, error_class set: rule T) found in claim order by
-- a partial index, without walking the untouched rows a stream published
-- without writing them. Rule T for rows an operator made ready before this
-- version while a stream ran: error_class 'released'.

-- +goose Up
ALTER TABLE outbox_stream ADD COLUMN watermark timestamptz NULL;
CREATE INDEX idx_handed_over ON outbox_events (next_attempt_at, occurred_at, id)
  WHERE published_at IS NULL AND error_class IS NOT NULL;
UPDATE outbox_events SET error_class = 'released'
WHERE published_at IS NULL AND error_class IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL
  AND EXISTS (SELECT 1 FROM outbox_stream WHERE position IS NOT NULL);

-- +goose Down
DROP INDEX idx_handed_over;
ALTER TABLE outbox_stream DROP COLUMN watermark;
