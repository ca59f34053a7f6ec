package changestream

import (
	"fmt"
)

// Position is a reader's typed position (binlog.Position, wal.Position):
// its stable text, and its order.
type Position[P any] interface {
	String() string
	// Reached reports whether the position is at or past target.
	Reached(target P) (bool, error)
}

// Positions is how a Source reads its reader's positions from their text.
type Positions[P Position[P]] struct {
	// Kind names the positions in errors ("binlog", "WAL").
	Kind string
	// Parse reads a position's text.
	Parse func(string) (P, error)
}

// Checkpoint parses from, the text a Source's Open is given. Text that is
// not a position of this kind (another source's checkpoint) is
// ErrPositionGone: nothing of it applies here, so the caller sweeps, as
// for a position the server lost.
func (ps Positions[P]) Checkpoint(from string) (P, error) {
	p, err := ps.Parse(from)
	if err != nil {
		return p, fmt.Errorf("%w: the stream's checkpoint is not a %s position: %v", ErrPositionGone, ps.Kind, err)
	}
	return p, nil
}

// Reached is a Source's Reached: the order of the positions whose texts
// position and target are; text of no position is an error.
func (ps Positions[P]) Reached(position, target string) (bool, error) {
	p, err := ps.Parse(position)
	if err != nil {
		return false, err
	}
	t, err := ps.Parse(target)
	if err != nil {
		return false, err
	}
	return p.Reached(t)
}

// Text returns the text of p, a position a head function returned, or
// its error.
func Text[P fmt.Stringer](p P, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return p.String(), nil
}
