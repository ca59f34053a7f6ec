-- The inbox: one row per (consumer, event) that consumer has applied. The
-- primary key is the deduplication; idx_consumed_at serves retention cleanup.

-- +goose Up
CREATE TABLE consumed_events (
  consumer_name VARCHAR(128) NOT NULL,
  event_id      CHAR(36)     NOT NULL,
  consumed_at   DATETIME(6)  NOT NULL,
  PRIMARY KEY (consumer_name, event_id),
  KEY idx_consumed_at (consumed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE consumed_events;
