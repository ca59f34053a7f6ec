package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Dialect implements store.Dialect for PostgreSQL.
type Dialect struct{}

var _ store.Dialect = Dialect{}

// NewStore returns herald's store on db (opened with Open).
func NewStore(db *sql.DB) *store.Store {
	return store.New(db, Dialect{})
}

// Name returns "postgres".
func (Dialect) Name() string { return "postgres" }

// The "never" of next_attempt_at is timestamptz 'infinity': later than
// every time, so no claim's range (next_attempt_at <= now) reaches it and
// shifting it by an interval leaves it where it is. Go has no such time:
// statements write it as a literal and read rows as "Forever" through
// isfinite().
const never = "'infinity'::timestamptz"

// Now reads the database clock: the statement's start (see the package
// documentation).
func (Dialect) Now(ctx context.Context, q store.Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRowContext(ctx, "SELECT statement_timestamp()").Scan(&now)
	return now.UTC(), err
}

// untouched says that the row of alias is as its writer inserted it: no
// relay, stream or operator wrote it since (docs/design.md, section 9.2,
// rule T).
func untouched(alias string) string {
	return "(" + alias + ".published_at IS NULL AND " + alias + ".error_class IS NULL AND " +
		alias + ".quarantined_at IS NULL AND " + alias + ".discarded_at IS NULL)"
}

// finiteOrNull is a nullable time: NULL for 'infinity'.
func finiteOrNull(column string) string {
	return "CASE WHEN isfinite(" + column + ") THEN " + column + " END"
}

// holdUntil is the next_attempt_at of a hold: a time parameter, or nil
// meaning never (the statements write COALESCE($n, 'infinity')).
func holdUntil(h store.Hold) any {
	if h.Forever {
		return nil
	}
	return h.Until.UTC()
}
