-- The SQL contract on PostgreSQL (as migrations/sql/00006_sql_contract.sql;
-- docs/writers.md): a plain INSERT of the specification's columns, in the
-- writer's own transaction and from any language, is a valid herald event.
-- A BEFORE INSERT trigger keeps what herald needs (docs/design.md,
-- section 1):
--   aggregate_seq    when the writer gives none (omitted, NULL or 0), the
--                    trigger adds one to the aggregate's counter in
--                    outbox_aggregates (INSERT ... ON CONFLICT DO UPDATE,
--                    atomic at READ COMMITTED) and takes the new value,
--                    inside the writer's transaction: writers of one
--                    aggregate take turns on the counter row, so the
--                    sequence is gapless and in commit order (invariant W1)
--   next_attempt_at  always clock_timestamp() at the moment the row is
--                    inserted, whatever the writer sent, taken after
--                    pg_current_xact_id() gave the transaction its id:
--                    a change stream's watermark relies on a row's time
--                    being later than its transaction's start
--   occurred_at      when the writer gives none (omitted or NULL), the same
--                    clock: the writer's own time is optional
-- and refuses, with SQLSTATE 23514 (check_violation) and a message naming
-- the column, a row without an id, with a blank aggregate_type,
-- aggregate_id or event_type, a payload larger than 1 MiB, or headers
-- that are not a JSON object of at most 32 strings (names of 1-128
-- characters, none in herald's reserved prefix herald-, values of at most
-- 1,024). The column types refuse the rest: an id that is not a uuid, a
-- payload that is not json, too long a text, a schema_version outside
-- 1-65535, a NUL character (text and jsonb cannot hold one). The checks come before the counter is
-- touched.
--
-- The function runs as its owner (SECURITY DEFINER, the role that
-- migrated), with search_path pinned to this schema (and pg_temp last, so
-- no temporary table can stand in for outbox_aggregates): a writer needs
-- only INSERT on outbox_events (docs/security.md).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox_events_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  header record;
  n integer;
BEGIN
  IF NEW.id IS NULL THEN
    RAISE EXCEPTION 'herald outbox_events: id is required (a UUID)' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.aggregate_type IS NULL OR btrim(NEW.aggregate_type) = '' THEN
    RAISE EXCEPTION 'herald outbox_events: aggregate_type is required (it must not be empty or blank)' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.aggregate_id IS NULL OR btrim(NEW.aggregate_id) = '' THEN
    RAISE EXCEPTION 'herald outbox_events: aggregate_id is required (it must not be empty or blank)' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.event_type IS NULL OR btrim(NEW.event_type) = '' THEN
    RAISE EXCEPTION 'herald outbox_events: event_type is required (it must not be empty or blank)' USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.payload IS NULL THEN
    RAISE EXCEPTION 'herald outbox_events: payload is required (a JSON document)' USING ERRCODE = 'check_violation';
  END IF;
  IF octet_length(NEW.payload::text) > 1048576 THEN
    RAISE EXCEPTION 'herald outbox_events: payload is % bytes, more than the limit of 1048576', octet_length(NEW.payload::text)
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.headers IS NOT NULL THEN
    IF jsonb_typeof(NEW.headers) <> 'object' THEN
      RAISE EXCEPTION 'herald outbox_events: headers must be NULL or a JSON object of strings, not %', jsonb_typeof(NEW.headers)
        USING ERRCODE = 'check_violation';
    END IF;
    n := (SELECT count(*) FROM jsonb_object_keys(NEW.headers));
    IF n > 32 THEN
      RAISE EXCEPTION 'herald outbox_events: headers has % entries, more than the limit of 32', n USING ERRCODE = 'check_violation';
    END IF;
    FOR header IN SELECT key, value FROM jsonb_each(NEW.headers) LOOP
      IF btrim(header.key) = '' OR char_length(header.key) > 128 THEN
        RAISE EXCEPTION 'herald outbox_events: header name ''%'' must have 1 to 128 characters', left(header.key, 40)
          USING ERRCODE = 'check_violation';
      END IF;
      IF lower(left(header.key, 7)) = 'herald-' THEN
        RAISE EXCEPTION 'herald outbox_events: header name ''%'' is in herald''s reserved prefix herald-', left(header.key, 40)
          USING ERRCODE = 'check_violation';
      END IF;
      IF jsonb_typeof(header.value) <> 'string' THEN
        RAISE EXCEPTION 'herald outbox_events: header ''%'' must be a string, not %', left(header.key, 40), jsonb_typeof(header.value)
          USING ERRCODE = 'check_violation';
      END IF;
      IF char_length(header.value #>> '{}') > 1024 THEN
        RAISE EXCEPTION 'herald outbox_events: header ''%'' is longer than 1024 characters', left(header.key, 40)
          USING ERRCODE = 'check_violation';
      END IF;
    END LOOP;
  END IF;

  IF NEW.aggregate_seq IS NULL OR NEW.aggregate_seq = 0 THEN
    -- W1: locks the counter row until the writer's transaction ends.
    INSERT INTO outbox_aggregates AS a (aggregate_type, aggregate_id, last_seq)
    VALUES (NEW.aggregate_type, NEW.aggregate_id, 1)
    ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_seq = a.last_seq + 1
    RETURNING a.last_seq INTO NEW.aggregate_seq;
  END IF;
  -- Taken last: after the transaction has its id and after any wait for
  -- the counter row (docs/design.md, section 1, W2).
  PERFORM pg_current_xact_id();
  NEW.next_attempt_at := clock_timestamp();
  NEW.occurred_at := COALESCE(NEW.occurred_at, NEW.next_attempt_at);
  RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION outbox_events_before_insert() SET search_path = %I, pg_temp', current_schema());
END
$$;
-- +goose StatementEnd

CREATE TRIGGER outbox_events_before_insert BEFORE INSERT ON outbox_events
  FOR EACH ROW EXECUTE FUNCTION outbox_events_before_insert();

-- +goose Down
DROP TRIGGER outbox_events_before_insert ON outbox_events;
DROP FUNCTION outbox_events_before_insert();
