package store

import (
	"testing"
	"time"
)

// TestScannersReadTimesInUTC: a time the driver hands over in another
// location comes back as the same instant in UTC, and NULL as the zero
// time, nil, or never.
func TestScannersReadTimesInUTC(t *testing.T) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	at := time.Date(2026, 1, 16, 5, 0, 0, 0, kolkata)

	var got time.Time
	if err := UTC(&got).Scan(at); err != nil || !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("UTC scanned %v (%v), want %v in UTC", got, err, at)
	}
	if err := UTC(&got).Scan(nil); err != nil || !got.IsZero() {
		t.Errorf("UTC scanned NULL as %v (%v), want the zero time", got, err)
	}

	var ptr *time.Time
	if err := utcPtr(&ptr).Scan(at); err != nil || ptr == nil || !ptr.Equal(at) || ptr.Location() != time.UTC {
		t.Errorf("utcPtr scanned %v (%v), want %v in UTC", ptr, err, at)
	}
	if err := utcPtr(&ptr).Scan(nil); err != nil || ptr != nil {
		t.Errorf("utcPtr scanned NULL as %v (%v), want nil", ptr, err)
	}

	never := false
	if err := forever(&got, &never).Scan(at); err != nil || never || !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("forever scanned %v never=%v (%v), want %v in UTC", got, never, err, at)
	}
	if err := forever(&got, &never).Scan(nil); err != nil || !never || !got.IsZero() {
		t.Errorf("forever scanned NULL as %v never=%v (%v), want never", got, never, err)
	}
}
