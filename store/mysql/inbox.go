package mysql

import (
	"context"
	"database/sql"
	"errors"

	driver "github.com/go-sql-driver/mysql"
)

// errDuplicateKey is ER_DUP_ENTRY.
const errDuplicateKey = 1062

// InsertConsumed implements store.InboxDialect. A duplicate key fails only
// the statement in MySQL, so the transaction goes on.
func (Dialect) InsertConsumed(ctx context.Context, tx *sql.Tx, consumer, eventID string) (bool, error) {
	_, err := tx.ExecContext(ctx,
		"INSERT INTO consumed_events (consumer_name, event_id, consumed_at) VALUES (?, ?, UTC_TIMESTAMP(6))",
		consumer, eventID)
	var myErr *driver.MySQLError
	if errors.As(err, &myErr) && myErr.Number == errDuplicateKey {
		return true, nil
	}
	return false, err
}

// transientErrors are server errors worth retrying: the statement or
// transaction was rolled back for reasons that pass.
var transientErrors = map[uint16]bool{
	1205: true, // ER_LOCK_WAIT_TIMEOUT
	1213: true, // ER_LOCK_DEADLOCK
	1040: true, // ER_CON_COUNT_ERROR (too many connections)
	1053: true, // ER_SERVER_SHUTDOWN
	1290: true, // ER_OPTION_PREVENTS_STATEMENT (read-only during a failover)
	1927: true, // ER_CONNECTION_KILLED (MariaDB)
	1317: true, // ER_QUERY_INTERRUPTED
	4031: true, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
}

// IsTransient implements store.InboxDialect: a transient server error, or
// the driver's own report of a connection it lost.
func (Dialect) IsTransient(err error) bool {
	var myErr *driver.MySQLError
	if errors.As(err, &myErr) {
		return transientErrors[myErr.Number]
	}
	return errors.Is(err, driver.ErrInvalidConn)
}
