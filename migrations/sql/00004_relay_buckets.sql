-- Bucket leases (docs/design.md, section 4.1): every aggregate hashes into
-- one of 64 buckets, and a relay claims only events of buckets it owns.
--   outbox_relays   the live relays: each renews its row, so all agree on
--                   the members and on which buckets each should own
--   outbox_buckets  one row per bucket (created by the first relay): its
--                   owner, the lease's end and the epoch that fences a
--                   relay's writes after a takeover

-- +goose Up
CREATE TABLE outbox_relays (
  relay_id   VARCHAR(128) NOT NULL,
  started_at DATETIME(6)  NOT NULL,
  expires_at DATETIME(6)  NOT NULL,
  PRIMARY KEY (relay_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE outbox_buckets (
  bucket     SMALLINT UNSIGNED NOT NULL,
  owner      VARCHAR(128)      NULL,
  epoch      BIGINT UNSIGNED   NOT NULL,
  expires_at DATETIME(6)       NULL,
  PRIMARY KEY (bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE outbox_buckets;
DROP TABLE outbox_relays;
