-- The shop's tables, unchanged: its orders and the outbox table in the
-- shape Debezium's documentation gives it.
CREATE TABLE orders (
  id          BIGINT        NOT NULL PRIMARY KEY,
  customer_id BIGINT        NOT NULL,
  total       DECIMAL(12,2) NOT NULL,
  status      VARCHAR(16)   NOT NULL
);
CREATE TABLE outbox (
  id            CHAR(36)     NOT NULL PRIMARY KEY,
  aggregatetype VARCHAR(255) NOT NULL,
  aggregateid   VARCHAR(255) NOT NULL,
  type          VARCHAR(255) NOT NULL,
  payload       JSON,
  created_at    DATETIME(3)  NOT NULL DEFAULT UTC_TIMESTAMP(3)
);
