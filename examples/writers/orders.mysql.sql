CREATE TABLE orders (
  id           BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id  BIGINT        NOT NULL,
  total_amount DECIMAL(12,2) NOT NULL,
  status       VARCHAR(16)   NOT NULL
) ENGINE=InnoDB;
