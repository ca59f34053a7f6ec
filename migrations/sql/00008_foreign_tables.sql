-- Foreign outbox tables (docs/design.md, section 10): a table written for
-- another relay (Debezium's outbox columns, or the team's own names) is
-- relayed by copying each inserted row into outbox_events in the writer's
-- transaction, through a trigger `herald migrate up --mapping FILE` adds to
-- it. What that needs here:
--   outbox_events.fields  the foreign columns the record formats need beside
--                         the mapped ones (table.fields.additional.placement),
--                         a JSON object by column name; NULL for every other
--                         writer's rows
--   outbox_mappings       one row per foreign table whose inserts are copied:
--                         its trigger and the mapping it was made from, so a
--                         relay can check at start that the fields its record
--                         format needs are copied
-- Adding a NULL column at the end of outbox_events changes the table's
-- metadata only (MariaDB 10.3+, MySQL 8.0.29+: instant).

-- +goose Up
ALTER TABLE outbox_events ADD COLUMN fields JSON NULL;
CREATE TABLE outbox_mappings (
  table_name   VARCHAR(64)   NOT NULL,
  trigger_name VARCHAR(64)   NOT NULL,
  mapping      JSON          NOT NULL,
  installed_at DATETIME(6)   NOT NULL,
  PRIMARY KEY (table_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE outbox_mappings;
ALTER TABLE outbox_events DROP COLUMN fields;
