package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOwnedAggregates: a writer takes only its own aggregates, in turn,
// wraps around, and numbers each aggregate's events from 1 in write order,
// also when one batch holds an aggregate twice.
func TestOwnedAggregates(t *testing.T) {
	own := newOwnedAggregates(1, 2, 5) // writer 1 of 2 over agg-0000..agg-0004: owns 1 and 3
	rnd := rand.New(rand.NewPCG(1, 2))
	var got []string
	for _, n := range []int{3, 2} {
		for _, e := range own.batch(n, 120, rnd) {
			agg, seq, ok := parseEvent(e.Payload)
			if !ok || agg != e.Agg || seq != e.Seq {
				t.Errorf("payload says %q %d (%v), event %q %d", agg, seq, ok, e.Agg, e.Seq)
			}
			got = append(got, fmt.Sprintf("%s#%d", e.Agg, e.Seq))
		}
	}
	want := []string{"agg-0001#1", "agg-0003#1", "agg-0001#2", "agg-0003#2", "agg-0001#3"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
