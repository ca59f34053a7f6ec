package testenv

import "testing"

// StartDebezium itself is proven by the test that relies on it:
// examples/debezium's TestSwitchFromDebezium runs four connectors with
// different settings in one worker, inserts right after StartDebezium
// returns, compares every record with herald's and stops the worker.

// TestDebeziumPropertyValuesAreEscaped: a connector property's value
// reaches Connect as written, through java.util.Properties' escapes.
func TestDebeziumPropertyValuesAreEscaped(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "outbox.event.${routedByValue}", "outbox.event.${routedByValue}"},
		{"backslash", `a\b`, `a\\b`},
		{"leading space", " x y", `\ x y`},
		{"line break", "a\nb", `a\nb`},
		{"beyond ASCII", "é😀", `\u00e9\ud83d\ude00`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := escapePropertyValue(tc.in); got != tc.want {
				t.Errorf("escapePropertyValue(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
