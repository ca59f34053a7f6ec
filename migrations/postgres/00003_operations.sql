-- Operations on PostgreSQL: the failure log, the audit trail of operator
-- actions, and replay checkpoints (as migrations/sql/00003_operations.sql).
-- Index names are unique per schema in PostgreSQL, so they carry their
-- table's name. The audit's details are json, kept as herald wrote them
-- (jsonb would respace and reorder them); the checkpoint's selection is
-- jsonb, read back only as a value.

-- +goose Up
CREATE TABLE outbox_failures (
  id          bigint GENERATED ALWAYS AS IDENTITY,
  failed_at   timestamptz               NOT NULL,
  event_id    uuid                      NOT NULL,
  relay_id    varchar(128)  COLLATE "C" NOT NULL,
  attempt     integer                   NOT NULL CHECK (attempt >= 0),
  error_class varchar(32)   COLLATE "C" NOT NULL,
  error       varchar(1000)             NOT NULL,
  quarantined boolean                   NOT NULL,
  CONSTRAINT outbox_failures_pkey PRIMARY KEY (id)
);
CREATE INDEX idx_failures_failed_at ON outbox_failures (failed_at);
CREATE INDEX idx_failures_event ON outbox_failures (event_id);

CREATE TABLE outbox_audit (
  id       bigint GENERATED ALWAYS AS IDENTITY,
  at       timestamptz               NOT NULL,
  actor    varchar(128)  COLLATE "C" NOT NULL,
  action   varchar(32)   COLLATE "C" NOT NULL,
  event_id uuid                      NULL,
  reason   varchar(1000)             NULL,
  details  json                      NULL,
  CONSTRAINT outbox_audit_pkey PRIMARY KEY (id)
);
CREATE INDEX idx_audit_event ON outbox_audit (event_id);
CREATE INDEX idx_audit_at ON outbox_audit (at);

CREATE TABLE herald_replay_checkpoints (
  name          varchar(128)  COLLATE "C" NOT NULL,
  selection     jsonb                     NOT NULL,
  position_type varchar(64)   COLLATE "C" NOT NULL,
  position_id   varchar(128)  COLLATE "C" NOT NULL,
  position_seq  bigint                    NOT NULL CHECK (position_seq >= 0),
  replayed      bigint                    NOT NULL DEFAULT 0 CHECK (replayed >= 0),
  finished_at   timestamptz               NULL,
  updated_at    timestamptz               NOT NULL,
  CONSTRAINT herald_replay_checkpoints_pkey PRIMARY KEY (name)
);

-- +goose Down
DROP TABLE herald_replay_checkpoints;
DROP TABLE outbox_audit;
DROP TABLE outbox_failures;
