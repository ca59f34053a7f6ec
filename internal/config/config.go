package config

import (
	"errors"
	"fmt"
)

// Error is one invalid field of a Config.
type Error struct {
	// Field is the field's name, dotted for a config nested in another
	// ("Relay.Lease").
	Field string
	// Msg says what is wrong, e.g. "must be at least 1s, got 0s".
	Msg string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

// Errors collects the invalid fields of one validation, so every problem is
// reported at once rather than one per attempt.
type Errors []error

// Add records that field is invalid.
func (e *Errors) Add(field, format string, args ...any) {
	*e = append(*e, &Error{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Nest records the errors of a nested config's validation, renaming each
// *Error's field as prefix.Field.
func (e *Errors) Nest(prefix string, err error) {
	for _, leaf := range Leaves(err) {
		var fe *Error
		if errors.As(leaf, &fe) {
			leaf = &Error{Field: prefix + "." + fe.Field, Msg: fe.Msg}
		}
		*e = append(*e, leaf)
	}
}

// Err joins the collected errors; nil when there are none.
func (e Errors) Err() error { return errors.Join(e...) }

// Leaves lists the errors inside a joined or wrapped error, outermost
// wrapping removed: each *Error of a validation is one leaf.
func Leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Leaves(e)...)
		}
		return out
	}
	var fe *Error
	if errors.As(err, &fe) {
		if u := errors.Unwrap(err); u != nil {
			return Leaves(u)
		}
	}
	return []error{err}
}
