-- Operations: a failure log (what `herald status` and `herald quarantine show`
-- read: every failed attempt, not only the last), the audit trail of operator
-- actions, and replay checkpoints.

-- +goose Up
CREATE TABLE outbox_failures (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  failed_at   DATETIME(6)     NOT NULL,
  event_id    CHAR(36)        NOT NULL,
  relay_id    VARCHAR(128)    NOT NULL,
  attempt     INT UNSIGNED    NOT NULL,
  error_class VARCHAR(32)     NOT NULL,
  error       VARCHAR(1000)   NOT NULL,
  quarantined BOOLEAN         NOT NULL,
  PRIMARY KEY (id),
  KEY idx_failed_at (failed_at),
  KEY idx_event (event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE outbox_audit (
  id        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  at        DATETIME(6)     NOT NULL,
  actor     VARCHAR(128)    NOT NULL,
  action    VARCHAR(32)     NOT NULL,
  event_id  CHAR(36)        NULL,
  reason    VARCHAR(1000)   NULL,
  details   JSON            NULL,
  PRIMARY KEY (id),
  KEY idx_event (event_id),
  KEY idx_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE herald_replay_checkpoints (
  name          VARCHAR(128)    NOT NULL,
  selection     JSON            NOT NULL,
  position_type VARCHAR(64)     NOT NULL,
  position_id   VARCHAR(128)    NOT NULL,
  position_seq  BIGINT UNSIGNED NOT NULL,
  replayed      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  finished_at   DATETIME(6)     NULL,
  updated_at    DATETIME(6)     NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE herald_replay_checkpoints;
DROP TABLE outbox_audit;
DROP TABLE outbox_failures;
