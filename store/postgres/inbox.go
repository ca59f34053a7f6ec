package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/herald-outbox/herald/store"
)

// InsertConsumed implements store.InboxDialect. A unique violation would
// abort a PostgreSQL transaction, so the insert never raises one: ON
// CONFLICT DO NOTHING inserts nothing when the row exists (waiting, if
// another transaction is inserting the same row, for it to end) and the
// transaction stays usable.
func (Dialect) InsertConsumed(ctx context.Context, tx *sql.Tx, consumer, eventID string) (bool, error) {
	n, err := store.RowsAffected(tx.ExecContext(ctx,
		`INSERT INTO consumed_events (consumer_name, event_id, consumed_at) VALUES ($1, $2, statement_timestamp())
		 ON CONFLICT (consumer_name, event_id) DO NOTHING`,
		consumer, eventID))
	if err != nil {
		return false, err
	}
	return n == 0, nil
}

// transientStates are SQLSTATEs worth retrying: the transaction was rolled
// back, or the server refused or dropped the session, for reasons that pass.
var transientStates = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available (lock_timeout)
	"57014": true, // query_canceled (statement_timeout)
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now (starting up, shutting down, in recovery)
	"57P05": true, // idle_session_timeout
	"25006": true, // read_only_sql_transaction (a standby during a failover)
	"53300": true, // too_many_connections
	"08000": true, // connection_exception
	"08003": true, // connection_does_not_exist
	"08006": true, // connection_failure
	"08001": true, // sqlclient_unable_to_establish_sqlconnection
	"08004": true, // sqlserver_rejected_establishment_of_sqlconnection
}

// sqlState is implemented by pgx's server errors (*pgconn.PgError), and by
// those of other drivers that report their SQLSTATE the same way.
type sqlState interface{ SQLState() string }

// IsTransient implements store.InboxDialect: a server error whose SQLSTATE
// passes by itself. Lost connections are judged by the caller
// (inbox.IsTransient).
func (Dialect) IsTransient(err error) bool {
	var e sqlState
	return errors.As(err, &e) && transientStates[e.SQLState()]
}
