package changestream

import (
	"context"
	"errors"
	"time"

	"github.com/herald-outbox/herald/store"
)

// Source is a database's change stream: package relay streams from it and
// depends on no database. Positions are the reader's stable text, saved as
// the stream's checkpoint.
type Source interface {
	// Head is where a stream opened now begins: every transaction that
	// ended before Head was called lies before it, and is visible to reads
	// that start after Head returns.
	Head(ctx context.Context) (string, error)
	// Open reads the transactions after position from. A position the
	// server can no longer stream from, or one this source cannot read
	// (another source's checkpoint), is ErrPositionGone, from Open or from
	// the reader's Next.
	Open(ctx context.Context, from string) (Reader, error)
	// Reached says whether position is at or past target: every
	// transaction before target lies before position. Text that is not one
	// of this source's positions is an error.
	Reached(position, target string) (bool, error)
}

// Sweeper is a Source whose Head may lie after a commit that reads do not
// see yet (PostgreSQL writes a commit record an instant before the
// transaction is visible): the sweep before a stream starts takes its
// position from SweepHead instead, so nothing falls between the sweep and
// the stream (S1).
type Sweeper interface {
	// SweepHead readies the source to stream and returns a position such
	// that every transaction before it is visible to reads that start
	// after SweepHead returns, and every one after it is in a stream
	// opened there.
	SweepHead(ctx context.Context) (string, error)
}

// Reader reads a change stream. Next is called from one goroutine; Lag
// and Close from any.
type Reader interface {
	// Next blocks until the next committed transaction's outbox inserts,
	// a chunk of them, or a heartbeat that only moves the position. It
	// reconnects by itself; it returns ctx's error when ctx ends (a later
	// call goes on where this one stopped), ErrClosed after Close,
	// ErrPositionGone, and other errors for what retrying cannot fix.
	Next(ctx context.Context) (Tx, error)
	// Lag is how far the reader is behind the server: bytes (-1 when
	// unknown) and seconds.
	Lag() (bytes int64, seconds float64)
	// Close stops the reader: a blocked Next returns ErrClosed.
	Close() error
}

// Confirmer is a Reader that tells the server what its caller no longer
// needs (PostgreSQL's slot keeps its WAL until then): the caller calls
// Confirm with each checkpoint it saved, and only then, so the server
// never forgets a transaction the checkpoint has not passed (S1).
type Confirmer interface {
	Confirm(position string)
}

// Tx is one committed transaction's inserts into outbox_events, in insert
// order, or a chunk of them, or, with no Events, a heartbeat that only
// moves the position forward (the outbox was idle, or the server's
// transactions wrote other tables).
type Tx struct {
	// Events are the transaction's new outbox rows, as the polling path's
	// claim would return them (Attempts 0).
	Events []store.Event
	// Position is right after this transaction: a Reader opened from it
	// never returns this transaction again. It is "" for a chunk of a
	// transaction larger than Config.ChunkEvents that more of it follows:
	// a position inside a transaction cannot be resumed from.
	Position string
	// CommitTime is the server's commit time of the transaction, as
	// precise as the server logs it (MariaDB: seconds); for a heartbeat,
	// that of the last transaction its position covers where the server
	// says (the binlog), else zero (the WAL).
	CommitTime time.Time
}

// IsHeartbeat reports whether t carries no event.
func (t Tx) IsHeartbeat() bool { return len(t.Events) == 0 }

// ErrPositionGone means the server cannot stream from the position: the
// binlogs holding it were purged, the replication slot was dropped or
// invalidated or confirmed a later position, or the text is not one of
// this source's positions. The caller sweeps the outbox through the
// polling path and opens a new stream from a head taken before the sweep.
var ErrPositionGone = errors.New("the change stream's position is no longer on the server")

// ErrClosed is returned by a Reader's Next once it is closed.
var ErrClosed = errors.New("the change stream reader is closed")

// DecodeError is an outbox row, or a message of the stream, that the
// reader cannot read: reading it again cannot help, so Next returns it
// rather than reconnecting.
type DecodeError struct{ Err error }

func (e *DecodeError) Error() string { return e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// Permanent reports whether err is one retrying cannot fix whatever the
// database: the reader closed, the position gone, a row it cannot decode.
// Each reader adds its server's own (grants, refusals).
func Permanent(err error) bool {
	var de *DecodeError
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrPositionGone) || errors.As(err, &de)
}
