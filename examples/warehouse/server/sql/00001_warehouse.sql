-- The warehouse's own tables. It remembers every idempotency key with a
-- hash of the request and the response it gave, so a repeated request gets
-- the first response and changes nothing.

-- +goose Up
CREATE TABLE warehouse_requests (
  idempotency_key VARCHAR(128) NOT NULL,
  request_sha256  CHAR(64)     NOT NULL,
  status_code     SMALLINT     NOT NULL,
  response_body   TEXT         NOT NULL,
  replays         INT UNSIGNED NOT NULL DEFAULT 0,
  created_at      DATETIME(6)  NOT NULL,
  PRIMARY KEY (idempotency_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per applied operation: the effects the verifier counts.
CREATE TABLE warehouse_effects (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  idempotency_key VARCHAR(128)    NOT NULL,
  action          VARCHAR(16)     NOT NULL,
  order_id        BIGINT          NOT NULL,
  items           JSON            NOT NULL,
  created_at      DATETIME(6)     NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_effect_key (idempotency_key),
  KEY idx_order (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE warehouse_effects;
DROP TABLE warehouse_requests;
