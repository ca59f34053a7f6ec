-- The outbox on PostgreSQL: the same logical table as the MySQL schema
-- (migrations/sql/00001_outbox.sql), in PostgreSQL's types
-- (docs/design.md, "PostgreSQL"):
--   id                  uuid: 16 bytes; a UUIDv7 keeps the primary key
--                       append-mostly, and uuid order is the text order
--   text columns        COLLATE "C": byte order and exact comparison, as
--                       MySQL's utf8mb4_bin, whatever the database's locale
--   payload             json, not jsonb: stored as the writer gave it, so the
--                       envelope's data is byte for byte the writer's
--   headers             jsonb: a flat object of strings, order meaningless
--   times               timestamptz: instants, whatever the session's zone
--   schema_version      integer with a check: SMALLINT UNSIGNED's range
-- A quarantined or discarded event's next_attempt_at is 'infinity', so the
-- claim query's index range never reaches it.
--
-- idx_ready ends with id: the claim order (next_attempt_at, occurred_at, id)
-- is total, so a claim can continue after the last row it read. InnoDB's
-- secondary indexes end with the primary key by themselves; PostgreSQL's
-- must name it.
--
-- A mark rewrites published_at, and a failure or a hold next_attempt_at,
-- both in idx_ready, so those updates are not HOT: each leaves a dead tuple
-- and dead index entries (a claim writes nothing). The table's autovacuum starts after 1,000 dead rows
-- plus 1 % of the table instead of 20 %, so vacuum keeps pace with the
-- relay (docs/benchmarks.md, "PostgreSQL: table bloat").

-- +goose Up
CREATE TABLE outbox_events (
  id              uuid                      NOT NULL,
  aggregate_type  varchar(64)   COLLATE "C" NOT NULL,
  aggregate_id    varchar(128)  COLLATE "C" NOT NULL,
  aggregate_seq   bigint                    NOT NULL CHECK (aggregate_seq > 0),
  event_type      varchar(128)  COLLATE "C" NOT NULL,
  schema_version  integer                   NOT NULL CHECK (schema_version BETWEEN 1 AND 65535),
  payload         json                      NOT NULL,
  headers         jsonb                     NULL,
  occurred_at     timestamptz               NOT NULL,
  published_at    timestamptz               NULL,
  attempts        integer                   NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz               NOT NULL,
  locked_at       timestamptz               NULL,
  locked_by       varchar(128)  COLLATE "C" NULL,
  last_error      varchar(1000)             NULL,
  error_class     varchar(32)   COLLATE "C" NULL,
  quarantined_at  timestamptz               NULL,
  discarded_at    timestamptz               NULL,
  CONSTRAINT outbox_events_pkey PRIMARY KEY (id),
  CONSTRAINT uq_aggregate_seq UNIQUE (aggregate_type, aggregate_id, aggregate_seq)
) WITH (
  autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_analyze_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
CREATE INDEX idx_ready ON outbox_events (published_at, next_attempt_at, occurred_at, id);
CREATE INDEX idx_aggregate ON outbox_events (aggregate_type, aggregate_id, occurred_at);

-- One row per aggregate: the last aggregate_seq handed out. Writers of one
-- aggregate serialize on this row, so aggregate_seq order is commit order.
-- last_seq is in no index: its updates are HOT, and a fill factor of 70
-- leaves them room on the row's page.
CREATE TABLE outbox_aggregates (
  aggregate_type varchar(64)  COLLATE "C" NOT NULL,
  aggregate_id   varchar(128) COLLATE "C" NOT NULL,
  last_seq       bigint                   NOT NULL,
  CONSTRAINT outbox_aggregates_pkey PRIMARY KEY (aggregate_type, aggregate_id)
) WITH (fillfactor = 70);

-- +goose Down
DROP TABLE outbox_aggregates;
DROP TABLE outbox_events;
