-- The orders example's own tables. They live in the same database as
-- herald's outbox so that an order and its events commit in one transaction.
--   orders            one row per order; total_amount is exact (DECIMAL)
--   order_items       the order's lines, numbered from 1
--   idempotency_keys  one row per Idempotency-Key a client sent with a
--                     committed POST /orders; the primary key is what makes
--                     concurrent requests with one key create one order

-- +goose Up
CREATE TABLE orders (
  id           BIGINT        NOT NULL AUTO_INCREMENT,
  customer_id  BIGINT        NOT NULL,
  status       VARCHAR(16)   NOT NULL,
  total_amount DECIMAL(15,2) NOT NULL,
  created_at   DATETIME(6)   NOT NULL,
  updated_at   DATETIME(6)   NOT NULL,
  PRIMARY KEY (id),
  KEY idx_customer (customer_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE order_items (
  order_id   BIGINT       NOT NULL,
  line_no    SMALLINT     NOT NULL,
  sku        VARCHAR(64)  NOT NULL,
  quantity   INT          NOT NULL,
  unit_price DECIMAL(9,2) NOT NULL,
  PRIMARY KEY (order_id, line_no),
  CONSTRAINT fk_order_items_order FOREIGN KEY (order_id) REFERENCES orders (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- request_hash is SHA-256 of the normalized request: a retry must carry the
-- same order. response_body is what the first request answered, replayed as
-- is. idx_created_at serves a retention cleanup.
CREATE TABLE idempotency_keys (
  idempotency_key VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  request_hash    BINARY(32)    NOT NULL,
  order_id        BIGINT        NULL,
  response_status SMALLINT      NULL,
  response_body   JSON          NULL,
  created_at      DATETIME(6)   NOT NULL,
  PRIMARY KEY (idempotency_key),
  KEY idx_created_at (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE order_items;
DROP TABLE orders;
