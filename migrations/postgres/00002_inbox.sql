-- The inbox on PostgreSQL: one row per (consumer, event) that consumer has
-- applied. The primary key is the deduplication (INSERT ... ON CONFLICT DO
-- NOTHING); idx_consumed_at serves retention cleanup.

-- +goose Up
CREATE TABLE consumed_events (
  consumer_name varchar(128) COLLATE "C" NOT NULL,
  event_id      uuid                     NOT NULL,
  consumed_at   timestamptz              NOT NULL,
  CONSTRAINT consumed_events_pkey PRIMARY KEY (consumer_name, event_id)
);
CREATE INDEX idx_consumed_at ON consumed_events (consumed_at);

-- +goose Down
DROP TABLE consumed_events;
