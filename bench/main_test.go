package main

import (
	"context"
	"strings"
	"testing"
)

// TestRunRefusesMalformedVariables: a BENCH_* variable that does not parse
// stops the run before anything starts, naming the variable, instead of
// being replaced by the default.
func TestRunRefusesMalformedVariables(t *testing.T) {
	for variable, value := range map[string]string{"BENCH_REPS": "two", "BENCH_SUSTAINED": "10"} {
		t.Run(variable, func(t *testing.T) {
			t.Setenv(variable, value)
			err := runCommand(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), variable) {
				t.Errorf("runCommand with %s=%q: %v, want an error naming the variable", variable, value, err)
			}
		})
	}
}
