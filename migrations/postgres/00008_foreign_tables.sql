-- As migrations/sql/00008_foreign_tables.sql (docs/design.md, section 10):
-- outbox_events.fields, the columns a foreign table's copy brings for the
-- record formats (a JSON object by column name, NULL for every other
-- writer's rows), and outbox_mappings, the foreign tables whose inserts are
-- copied with the mapping each copy was made from. Adding a NULL column
-- changes the catalog only.

-- +goose Up
ALTER TABLE outbox_events ADD COLUMN fields jsonb NULL;
CREATE TABLE outbox_mappings (
  table_name   varchar(63)  COLLATE "C" NOT NULL,
  trigger_name varchar(63)  COLLATE "C" NOT NULL,
  mapping      jsonb                    NOT NULL,
  installed_at timestamptz              NOT NULL,
  CONSTRAINT outbox_mappings_pkey PRIMARY KEY (table_name)
);

-- +goose Down
DROP TABLE outbox_mappings;
ALTER TABLE outbox_events DROP COLUMN fields;
