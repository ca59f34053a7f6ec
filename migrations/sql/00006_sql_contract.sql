-- The SQL contract (docs/writers.md): a plain INSERT of the specification's
-- columns, in the writer's own transaction and from any language, is a
-- valid herald event. A BEFORE INSERT trigger keeps what herald needs
-- (docs/design.md, section 1):
--   aggregate_seq    when the writer gives none (omitted, NULL or 0), the
--                    trigger adds one to the aggregate's counter in
--                    outbox_aggregates and takes the new value, inside the
--                    writer's transaction: writers of one aggregate take
--                    turns on the counter row, so the sequence is gapless
--                    and in commit order (invariant W1)
--   next_attempt_at  always the database's UTC clock at the moment the row
--                    is inserted, whatever the writer sent: UTC_TIMESTAMP(6)
--                    is the statement's start (as NOW(6)), so the time that
--                    passed since (SYSDATE(6) - NOW(6), both in the session's
--                    zone, which cancels out) is added to it
--   occurred_at      when the writer gives none (omitted or NULL), the same
--                    clock: the writer's own time is optional
--   id               lower case, as PostgreSQL's uuid prints it
-- and refuses, with SQLSTATE 45000 and a message naming the column, a row
-- without a UUID id, with a blank aggregate_type, aggregate_id or
-- event_type or a NUL character in one, a schema_version below 1, a payload
-- that is not JSON or is larger than 1 MiB, or headers that are not a JSON
-- object of at most 32 strings (names of 1-128 characters, none in herald's
-- reserved prefix herald-, values of at most 1,024, no NUL character):
-- what outbox.Writer refuses too (docs/contracts.md, sections 2 and 8). Nothing of
-- such a row is written: the checks come before the counter is touched.
-- The column types refuse the rest (too long a text, in the strict SQL
-- mode every MySQL and MariaDB has by default).
--
-- The defaults let a writer leave aggregate_seq, next_attempt_at and
-- occurred_at out on every MySQL version: MySQL 8 refuses an omitted NOT
-- NULL column without a default (ERROR 1364) before BEFORE triggers run,
-- MariaDB after. The trigger replaces each default (occurred_at's
-- 1970-01-01 00:00:00 stands for "none"). Changing a default is a change
-- of metadata only, not a rebuild of the table.
--
-- On a server with binary logging (the binlog relay's), creating a trigger
-- takes SUPER or log_bin_trust_function_creators=1 (ERROR 1419):
-- migrations.Set.Up checks it before applying anything and names the fix.
-- The trigger runs with its definer's rights (the user that migrated), so a
-- writer needs only INSERT on outbox_events (docs/security.md).

-- +goose Up
ALTER TABLE outbox_events
  ALTER COLUMN aggregate_seq SET DEFAULT 0,
  ALTER COLUMN next_attempt_at SET DEFAULT '1970-01-01 00:00:00',
  ALTER COLUMN occurred_at SET DEFAULT '1970-01-01 00:00:00';

-- +goose StatementBegin
CREATE TRIGGER outbox_events_before_insert BEFORE INSERT ON outbox_events FOR EACH ROW
BEGIN
  DECLARE msg VARCHAR(128);
  DECLARE n, i INT DEFAULT 0;
  DECLARE header_names, header_values, header_value JSON;
  DECLARE header_name TEXT;
  DECLARE now_utc DATETIME(6);

  IF NEW.id IS NULL OR NEW.id NOT REGEXP '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$' THEN
    SET msg = CONCAT('herald outbox_events: id must be a UUID (8-4-4-4-12 hex digits), got ', COALESCE(CONCAT('''', LEFT(NEW.id, 40), ''''), 'NULL'));
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
  END IF;
  IF NEW.aggregate_type IS NULL OR TRIM(NEW.aggregate_type) = '' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: aggregate_type is required (it must not be empty or blank)';
  ELSEIF INSTR(NEW.aggregate_type, CHAR(0)) > 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: aggregate_type must not contain a NUL character';
  END IF;
  IF NEW.aggregate_id IS NULL OR TRIM(NEW.aggregate_id) = '' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: aggregate_id is required (it must not be empty or blank)';
  ELSEIF INSTR(NEW.aggregate_id, CHAR(0)) > 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: aggregate_id must not contain a NUL character';
  END IF;
  IF NEW.event_type IS NULL OR TRIM(NEW.event_type) = '' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: event_type is required (it must not be empty or blank)';
  ELSEIF INSTR(NEW.event_type, CHAR(0)) > 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: event_type must not contain a NUL character';
  END IF;
  IF NEW.schema_version IS NULL OR NEW.schema_version < 1 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: schema_version must be 1 or more';
  END IF;
  IF NEW.payload IS NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: payload is required (a JSON document)';
  END IF;
  IF NOT JSON_VALID(NEW.payload) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: payload is not valid JSON';
  END IF;
  IF LENGTH(NEW.payload) > 1048576 THEN
    SET msg = CONCAT('herald outbox_events: payload is ', LENGTH(NEW.payload), ' bytes, more than the limit of 1048576');
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
  END IF;
  IF NEW.headers IS NOT NULL THEN
    IF NOT JSON_VALID(NEW.headers) OR JSON_TYPE(NEW.headers) <> 'OBJECT' THEN
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'herald outbox_events: headers must be NULL or a JSON object of strings';
    END IF;
    SET n = JSON_LENGTH(NEW.headers);
    IF n > 32 THEN
      SET msg = CONCAT('herald outbox_events: headers has ', n, ' entries, more than the limit of 32');
      SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    -- The names and the values, each in the object's order.
    SET header_names = JSON_KEYS(NEW.headers), header_values = JSON_EXTRACT(NEW.headers, '$.*');
    WHILE i < n DO
      SET header_name = JSON_UNQUOTE(JSON_EXTRACT(header_names, CONCAT('$[', i, ']')));
      SET header_value = JSON_EXTRACT(header_values, CONCAT('$[', i, ']'));
      IF TRIM(header_name) = '' OR CHAR_LENGTH(header_name) > 128 THEN
        SET msg = CONCAT('herald outbox_events: header name ''', LEFT(header_name, 40), ''' must have 1 to 128 characters');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
      END IF;
      IF LOWER(LEFT(header_name, 7)) = 'herald-' THEN
        SET msg = CONCAT('herald outbox_events: header name ''', LEFT(header_name, 40), ''' is in herald''s reserved prefix herald-');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
      END IF;
      IF JSON_TYPE(header_value) <> 'STRING' THEN
        SET msg = CONCAT('herald outbox_events: header ''', LEFT(header_name, 40), ''' must be a string, not ', LOWER(JSON_TYPE(header_value)));
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
      END IF;
      IF INSTR(header_name, CHAR(0)) > 0 OR INSTR(JSON_UNQUOTE(header_value), CHAR(0)) > 0 THEN
        SET msg = CONCAT('herald outbox_events: header ''', LEFT(REPLACE(header_name, CHAR(0), ''), 40), ''' contains a NUL character');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
      END IF;
      IF CHAR_LENGTH(JSON_UNQUOTE(header_value)) > 1024 THEN
        SET msg = CONCAT('herald outbox_events: header ''', LEFT(header_name, 40), ''' is longer than 1024 characters');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
      END IF;
      SET i = i + 1;
    END WHILE;
  END IF;

  SET NEW.id = LOWER(NEW.id);
  IF NEW.aggregate_seq IS NULL OR NEW.aggregate_seq = 0 THEN
    -- W1: locks the counter row until the writer's transaction ends.
    -- LAST_INSERT_ID(expr) carries the new value out of the upsert; the
    -- writer's own LAST_INSERT_ID() is restored when the trigger ends.
    INSERT INTO outbox_aggregates (aggregate_type, aggregate_id, last_seq)
    VALUES (NEW.aggregate_type, NEW.aggregate_id, LAST_INSERT_ID(1))
    ON DUPLICATE KEY UPDATE last_seq = LAST_INSERT_ID(last_seq + 1);
    SET NEW.aggregate_seq = LAST_INSERT_ID();
  END IF;
  -- Taken last: after the transaction exists and after any wait for the
  -- counter row (docs/design.md, section 1, W2).
  SET now_utc = UTC_TIMESTAMP(6) + INTERVAL TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) MICROSECOND;
  SET NEW.next_attempt_at = now_utc;
  IF NEW.occurred_at IS NULL OR NEW.occurred_at = '1970-01-01 00:00:00' THEN
    SET NEW.occurred_at = now_utc;
  END IF;
END
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER outbox_events_before_insert;
ALTER TABLE outbox_events
  ALTER COLUMN aggregate_seq DROP DEFAULT,
  ALTER COLUMN next_attempt_at DROP DEFAULT,
  ALTER COLUMN occurred_at DROP DEFAULT;
