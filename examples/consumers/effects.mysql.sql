CREATE TABLE order_effects (
  id         BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
  event_id   CHAR(36)    NOT NULL,
  order_id   BIGINT      NOT NULL,
  event_type VARCHAR(64) NOT NULL
) ENGINE=InnoDB;
