package mysql

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Dialect implements store.Dialect for MySQL and MariaDB.
type Dialect struct{}

var _ store.Dialect = Dialect{}

// NewStore returns herald's store on db (opened with Open).
func NewStore(db *sql.DB) *store.Store {
	return store.New(db, Dialect{})
}

// Name returns "mysql".
func (Dialect) Name() string { return "mysql" }

// untouched says that a row is as its writer inserted it: no relay,
// stream or operator wrote it since (docs/design.md, section 9.2, rule T).
const untouched = `(published_at IS NULL AND error_class IS NULL AND quarantined_at IS NULL AND discarded_at IS NULL)`

// never is the next_attempt_at of rows no claim may reach by itself
// (quarantined and discarded events, and events held behind a quarantined
// one): the largest DATETIME day, outside every claim's range.
var never = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Never is the dialect's "never" time, for tests that look at rows.
func (Dialect) Never() time.Time { return never }

// finiteOrNull is a nullable time: NULL for never (and anything past it),
// as the core's scanners read next_attempt_at.
func finiteOrNull(column string) string {
	return "CASE WHEN " + column + " < '" + datetime(never) + "' THEN " + column + " END"
}

// updateEvents begins every UPDATE of outbox_events. MariaDB checks a row's
// CHECK constraints on every update, even one of columns they do not name,
// and its JSON columns are CHECK (json_valid(...)): a row a foreign writer
// inserted with check_constraint_checks off, its payload or headers not
// JSON, could then never be quarantined, held or discarded, and the
// failed settle would stop the relay (docs/contracts.md, section 8). These
// updates never write payload or headers, so they skip the checks, for the
// one statement; the executable comment is MariaDB's alone (MySQL's JSON
// type cannot hold anything but JSON).
const updateEvents = "/*M! SET STATEMENT check_constraint_checks=0 FOR */ UPDATE outbox_events"

// Now reads the database clock in UTC.
func (Dialect) Now(ctx context.Context, q store.Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&now)
	return now, err
}

// datetime renders t as UTC DATETIME(6) text. Times are passed as text, not
// time.Time, so the connection's loc setting cannot shift them.
func datetime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.000000")
}

// holdUntil is the next_attempt_at of a hold.
func holdUntil(h store.Hold) string {
	if h.Forever {
		return datetime(never)
	}
	return datetime(h.Until)
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anySlice(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
