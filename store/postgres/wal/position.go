package wal

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
)

// positionPrefix starts a Position's text.
const positionPrefix = "pg-lsn:"

// Position is a place in the WAL between two transactions: the end of a
// transaction's commit record (pgoutput's end LSN), or a position the
// server's decoder reached with no transaction open. A stream started
// from it returns exactly the transactions whose commit lies after it.
// LSNs are the server's own: a position names one server's WAL (a
// standby promoted after a fail-over continues the same numbering, but
// the slot must have been kept there).
//
// Its text (String) is stable and round-trips through ParsePosition:
//
//	pg-lsn:0/16B3748
//
// The zero Position is no position at all (IsZero).
type Position struct{ lsn pglogrepl.LSN }

// PositionAt returns the position at lsn.
func PositionAt(lsn pglogrepl.LSN) Position { return Position{lsn} }

// LSN returns p's log sequence number.
func (p Position) LSN() pglogrepl.LSN { return p.lsn }

// String returns p's stable text ("" for the zero Position).
func (p Position) String() string {
	if p.IsZero() {
		return ""
	}
	return positionPrefix + p.lsn.String()
}

// IsZero reports whether p is the zero Position.
func (p Position) IsZero() bool { return p.lsn == 0 }

// Reached reports whether p is at or past target: every transaction
// before target lies before p. The zero Position is no position to
// compare.
func (p Position) Reached(target Position) (bool, error) {
	if p.IsZero() || target.IsZero() {
		return false, errors.New("wal: no position to compare")
	}
	return p.lsn >= target.lsn, nil
}

// ParsePosition parses the text of Position.String.
func ParsePosition(s string) (Position, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, positionPrefix)
	if !ok {
		return Position{}, fmt.Errorf("wal position %q: want %sX/Y (a PostgreSQL LSN)", s, positionPrefix)
	}
	lsn, err := pglogrepl.ParseLSN(rest)
	if err != nil || lsn == 0 {
		return Position{}, fmt.Errorf("wal position %q: %q is not a log sequence number", s, rest)
	}
	return Position{lsn}, nil
}
