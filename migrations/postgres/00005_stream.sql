-- The change stream (as migrations/sql/00005_stream.sql; docs/design.md,
-- section 9): one row, the streamer's lease (leader, epoch, expires_at, on
-- the database clock, fenced like a bucket's) and its checkpoint, the
-- position in the change stream up to which every outbox insert is
-- published or in the polling path's hands. PostgreSQL has no change
-- stream source yet (a logical replication slot would be one); the table
-- keeps the schemas alike and the stream primitives under the conformance
-- suite.

-- +goose Up
CREATE TABLE outbox_stream (
  id              smallint                  NOT NULL CHECK (id = 1),
  leader          varchar(128)  COLLATE "C" NULL,
  epoch           bigint                    NOT NULL CHECK (epoch >= 0),
  expires_at      timestamptz               NULL,
  position        varchar(4096) COLLATE "C" NULL,
  checkpointed_at timestamptz               NULL,
  CONSTRAINT outbox_stream_pkey PRIMARY KEY (id)
);

-- +goose Down
DROP TABLE outbox_stream;
