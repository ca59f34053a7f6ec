-- The change stream (docs/design.md, section 9): one row, the streamer's
-- lease (leader, epoch, expires_at, on the database clock, fenced like a
-- bucket's) and its checkpoint, the position in the change stream up to
-- which every outbox insert is published or in the polling path's hands.

-- +goose Up
CREATE TABLE outbox_stream (
  id              TINYINT UNSIGNED NOT NULL,
  leader          VARCHAR(128)     NULL,
  epoch           BIGINT UNSIGNED  NOT NULL,
  expires_at      DATETIME(6)      NULL,
  position        VARCHAR(4096)    NULL,
  checkpointed_at DATETIME(6)      NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE outbox_stream;
