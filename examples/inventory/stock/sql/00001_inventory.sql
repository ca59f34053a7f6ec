-- The inventory consumer's own tables. consumed_events (the inbox) comes
-- from herald's migrations.

-- +goose Up
CREATE TABLE stock (
  sku        VARCHAR(64) NOT NULL,
  available  BIGINT      NOT NULL,
  reserved   BIGINT      NOT NULL DEFAULT 0,
  updated_at DATETIME(6) NOT NULL,
  PRIMARY KEY (sku)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per (order, sku) ever reserved: the unique key is a second,
-- business-level guard behind the inbox.
CREATE TABLE reservations (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  order_id          BIGINT          NOT NULL,
  sku               VARCHAR(64)     NOT NULL,
  quantity          BIGINT          NOT NULL,
  status            ENUM('reserved','released') NOT NULL,
  reserved_event_id CHAR(36)        NOT NULL,
  released_event_id CHAR(36)        NULL,
  created_at        DATETIME(6)     NOT NULL,
  updated_at        DATETIME(6)     NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_reservation_order_sku (order_id, sku)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Orders that could not be reserved (stock short), recorded once.
CREATE TABLE rejections (
  order_id   BIGINT       NOT NULL,
  event_id   CHAR(36)     NOT NULL,
  reason     VARCHAR(255) NOT NULL,
  created_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (order_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The consumer-side outbox of calls to the warehouse: written in the same
-- transaction as the reservation, called after the commit, marked done.
-- idempotency_key is the event id, sent as the Idempotency-Key header.
CREATE TABLE warehouse_calls (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  idempotency_key CHAR(36)        NOT NULL,
  action          VARCHAR(16)     NOT NULL,
  order_id        BIGINT          NOT NULL,
  body            JSON            NOT NULL,
  status          ENUM('pending','done','failed') NOT NULL DEFAULT 'pending',
  attempts        INT UNSIGNED    NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6)     NOT NULL,
  last_error      VARCHAR(1000)   NULL,
  created_at      DATETIME(6)     NOT NULL,
  done_at         DATETIME(6)     NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_call_key (idempotency_key),
  KEY idx_call_pending (status, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE warehouse_calls;
DROP TABLE rejections;
DROP TABLE reservations;
DROP TABLE stock;
