-- The switch's marker, once herald's copy exists (and, as the shop's
-- writer does, deleted in its transaction): when Debezium has published
-- it, it has published every row the copy missed.
START TRANSACTION;
SET @marker = UUID();
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
VALUES (@marker, 'order', 'herald-cutover', 'HeraldCutover', '{}');
DELETE FROM outbox WHERE id = @marker;
COMMIT;
