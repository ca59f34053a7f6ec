-- A change stream publishes an event without writing its row (docs/design.md,
-- section 9.2): the row stays untouched, and its published state follows from
-- the stream's checkpoint. What readers without the stream need:
--   outbox_stream.watermark  every untouched row with next_attempt_at below it
--                            was committed before the checkpoint (invariant
--                            S2, section 9.3): published
--   handed_over_at           next_attempt_at of a row in the polling path's
--                            hands (unpublished, error_class set: rule T),
--                            else NULL; virtual, so writers never see it
--   idx_handed_over          finds those rows in claim order without walking
--                            the untouched rows the stream published
-- Rule T for rows an operator made ready before this version (error_class
-- cleared, unpublished) while a stream ran: they are given error_class
-- 'released', so no watermark can count them published.

-- +goose Up
ALTER TABLE outbox_stream ADD COLUMN watermark DATETIME(6) NULL;
ALTER TABLE outbox_events
  ADD COLUMN handed_over_at DATETIME(6)
    AS (IF(published_at IS NULL AND error_class IS NOT NULL, next_attempt_at, NULL)) VIRTUAL,
  ADD KEY idx_handed_over (handed_over_at, occurred_at, id);
/*M! SET STATEMENT check_constraint_checks=0 FOR */ UPDATE outbox_events SET error_class = 'released'
WHERE published_at IS NULL AND error_class IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL
  AND EXISTS (SELECT 1 FROM outbox_stream WHERE position IS NOT NULL);

-- +goose Down
ALTER TABLE outbox_events DROP KEY idx_handed_over, DROP COLUMN handed_over_at;
ALTER TABLE outbox_stream DROP COLUMN watermark;
