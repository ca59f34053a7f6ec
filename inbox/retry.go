package inbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/herald-outbox/herald/store"
)

// Retry classes, as Observer.Retried and Stats.Retries name them.
const (
	// RetryHandler: the handler failed; counts toward MaxAttempts.
	RetryHandler = "handler"
	// RetryTransient: a deadlock, lock wait timeout or lost connection;
	// retried without limit.
	RetryTransient = "transient"
	// RetryDatabase: the inbox's own statements failed (a missing table,
	// a refused permission): an operator's problem, never the record's, so
	// it is retried without limit and nothing is dead-lettered.
	RetryDatabase = "database"
)

// ClassHandler is the dead-letter class of a record whose handler kept
// failing (the other classes are envelope's).
const ClassHandler = "handler"

// IsTransient reports whether err is a database error that passes by
// itself: a server error d calls transient (a deadlock, a lock wait
// timeout, a server shutting down or read-only during a failover), a lost
// or refused connection, or a statement timeout. Such errors are retried
// without limit.
func IsTransient(d store.InboxDialect, err error) bool {
	if err == nil {
		return false
	}
	if d.IsTransient(err) {
		return true
	}
	var netErr net.Error
	switch {
	case errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr):
		return true
	}
	return false
}

// permanentError marks a handler error that no retry can fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps a handler error that no retry can fix (a business rule
// the event breaks): the record is dead-lettered at once instead of after
// MaxAttempts.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
