-- Bucket leases on PostgreSQL (as migrations/sql/00004_relay_buckets.sql;
-- docs/design.md, section 4.1): every aggregate hashes into one of 64
-- buckets, and a relay claims only events of buckets it owns.
--   outbox_relays   the live relays: each renews its row, so all agree on
--                   the members and on which buckets each should own
--   outbox_buckets  one row per bucket (created by the first relay): its
--                   owner, the lease's end and the epoch that fences a
--                   relay's writes after a takeover
-- Both are tiny and rewritten every few seconds: autovacuum keeps them
-- small at its defaults.
--
-- outbox_events_bucket gives the planner the distribution of the bucket
-- expression (store/postgres, bucketExpr: the same text, or the planner
-- does not match it), so a claim filtered by its relay's buckets is
-- estimated right and walks idx_ready in order instead of sorting what a
-- misestimate made look small (PostgreSQL 14+: statistics on expressions).

-- +goose Up
CREATE TABLE outbox_relays (
  relay_id   varchar(128) COLLATE "C" NOT NULL,
  started_at timestamptz              NOT NULL,
  expires_at timestamptz              NOT NULL,
  CONSTRAINT outbox_relays_pkey PRIMARY KEY (relay_id)
);

CREATE TABLE outbox_buckets (
  bucket     smallint                 NOT NULL CHECK (bucket >= 0),
  owner      varchar(128) COLLATE "C" NULL,
  epoch      bigint                   NOT NULL CHECK (epoch >= 0),
  expires_at timestamptz              NULL,
  CONSTRAINT outbox_buckets_pkey PRIMARY KEY (bucket)
);

CREATE STATISTICS outbox_events_bucket ON
  (mod(get_byte(sha256(convert_to(aggregate_type, 'UTF8') || decode('00', 'hex') || convert_to(aggregate_id, 'UTF8')), 0), 64))
  FROM outbox_events;

-- +goose Down
DROP STATISTICS outbox_events_bucket;
DROP TABLE outbox_buckets;
DROP TABLE outbox_relays;
