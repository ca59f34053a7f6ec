-- The outbox: the reference table of the specification plus what herald's
-- design needs (docs/design.md, "The outbox table"):
--   aggregate_seq       the event's position inside its aggregate, gapless and
--                       in commit order (handed out by outbox_aggregates)
--   uq_aggregate_seq    finds an event's predecessor in one index lookup
--   error_class         why the last attempt failed (timeout, too_large, ...)
--   quarantined_at      set when the event is isolated for an operator
--   discarded_at        set when an operator gave a quarantined event up
-- A quarantined or discarded event's next_attempt_at is 9999-12-31, so the
-- claim query's index range never reaches it.

-- +goose Up
CREATE TABLE outbox_events (
  id              CHAR(36)          NOT NULL,
  aggregate_type  VARCHAR(64)       NOT NULL,
  aggregate_id    VARCHAR(128)      NOT NULL,
  aggregate_seq   BIGINT UNSIGNED   NOT NULL,
  event_type      VARCHAR(128)      NOT NULL,
  schema_version  SMALLINT UNSIGNED NOT NULL,
  payload         JSON              NOT NULL,
  headers         JSON              NULL,
  occurred_at     DATETIME(6)       NOT NULL,
  published_at    DATETIME(6)       NULL,
  attempts        INT UNSIGNED      NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6)       NOT NULL,
  locked_at       DATETIME(6)       NULL,
  locked_by       VARCHAR(128)      NULL,
  last_error      VARCHAR(1000)     NULL,
  error_class     VARCHAR(32)       NULL,
  quarantined_at  DATETIME(6)       NULL,
  discarded_at    DATETIME(6)       NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_aggregate_seq (aggregate_type, aggregate_id, aggregate_seq),
  KEY idx_ready (published_at, next_attempt_at, occurred_at),
  KEY idx_aggregate (aggregate_type, aggregate_id, occurred_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per aggregate: the last aggregate_seq handed out. Writers of one
-- aggregate serialize on this row, so aggregate_seq order is commit order.
CREATE TABLE outbox_aggregates (
  aggregate_type VARCHAR(64)     NOT NULL,
  aggregate_id   VARCHAR(128)    NOT NULL,
  last_seq       BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (aggregate_type, aggregate_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE outbox_aggregates;
DROP TABLE outbox_events;
