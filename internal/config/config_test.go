package config

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestErrorsNamesEveryField(t *testing.T) {
	var errs Errors
	if errs.Err() != nil {
		t.Fatal("no error collected, yet Err is not nil")
	}
	errs.Add("Lease", "must be at least 1s, got %v", "0s")
	var inner Errors
	inner.Add("Interval", "must be at least 1s")
	errs.Nest("Cleaner", fmt.Errorf("cleaner config: %w", inner.Err()))
	errs.Nest("Relay", errors.New("not a field error"))

	err := fmt.Errorf("service config: %w", errs.Err())
	var got []string
	for _, leaf := range Leaves(err) {
		var fe *Error
		if errors.As(leaf, &fe) {
			got = append(got, fe.Field)
		} else {
			got = append(got, "other: "+leaf.Error())
		}
	}
	want := []string{"Lease", "Cleaner.Interval", "other: not a field error"}
	if !slices.Equal(got, want) {
		t.Errorf("leaves %q, want %q", got, want)
	}
	if s := (&Error{Field: "Lease", Msg: "must be positive"}).Error(); s != "Lease: must be positive" {
		t.Errorf("Error() = %q", s)
	}
}
