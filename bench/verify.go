package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// probeAggregate is the aggregate of the readiness probes: events the
// harness writes to learn that a peer publishes, left out of every figure.
const probeAggregate = "probe"

// record is what the harness keeps of one record read from a peer's topic.
type record struct {
	Partition int32
	Offset    int64
	Key       string
	Agg       string // from the payload; "" when it carries none
	Seq       int64  // the event's position in its aggregate, from 1
	Append    time.Time
}

// eventKey identifies a benchmark event: its aggregate and its position in
// it. Every event's payload carries both, whatever the peer's table shape
// or record format, so one check serves every peer.
type eventKey struct {
	Agg string
	Seq int64
}

// parseEvent finds the aggregate and sequence the harness wrote into an
// event's payload, in a record's value: the payload as is (Watermill,
// Debezium), inside herald's envelope ("data"), or as a JSON string of it.
func parseEvent(value []byte) (agg string, seq int64, ok bool) {
	if agg, seq, ok = scanEvent(value); ok {
		return agg, seq, true
	}
	if len(value) > 0 && value[0] == '"' {
		var s string
		if json.Unmarshal(value, &s) == nil {
			return scanEvent([]byte(s))
		}
	}
	return "", 0, false
}

// scanEvent reads `"agg":"..."` and `"seq":N`, which payload() writes first,
// without decoding the whole payload (a drain reads 100,000 of them).
func scanEvent(b []byte) (string, int64, bool) {
	i := bytes.Index(b, []byte(`"agg":"`))
	if i < 0 {
		return "", 0, false
	}
	rest := b[i+len(`"agg":"`):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", 0, false
	}
	agg := string(rest[:end])
	j := bytes.Index(b, []byte(`"seq":`))
	if j < 0 {
		return "", 0, false
	}
	digits := b[j+len(`"seq":`):]
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	seq, err := strconv.ParseInt(string(digits[:n]), 10, 64)
	if err != nil {
		return "", 0, false
	}
	return agg, seq, true
}

// Verification is what the harness checked of one run's topic.
type Verification struct {
	// Expected is how many events were written (probes aside).
	Expected int `json:"expected"`
	// Delivered is how many of them are on the topic at least once.
	Delivered int `json:"delivered"`
	// Missing is how many written events are not on the topic; counted
	// only when the run required every event (CompleteRequired).
	Missing int `json:"missing"`
	// CompleteRequired says whether the run waited for every event
	// (delivery runs, finished drains) or stopped with a backlog left
	// (sustained runs, drains past their budget).
	CompleteRequired bool `json:"complete_required"`
	// Duplicates counts records of events already seen (at-least-once
	// delivery allows them; they are reported, not failures).
	Duplicates int `json:"duplicates"`
	// OrderViolations counts events whose first appearance came after a
	// later event of the same aggregate had first appeared.
	OrderViolations int `json:"order_violations"`
	// KeysSplit counts aggregates found on more than one partition, whose
	// order offsets cannot establish.
	KeysSplit int `json:"keys_split"`
	// KeyMismatches counts records whose key is not their aggregate.
	KeyMismatches int `json:"key_mismatches"`
	// Unparsed counts records without the harness's aggregate and sequence.
	Unparsed int `json:"unparsed"`
	// Unexpected counts events on the topic that were never written.
	Unexpected int `json:"unexpected"`
	// FirstProblem describes the first failure found, for the report.
	FirstProblem string `json:"first_problem,omitempty"`
	// OK is true when no check failed.
	OK bool `json:"ok"`
}

// verify checks records (in the order read from each partition) against
// written (per aggregate, the events 1..n were written in that order):
// every written event is on the topic when complete is required, each
// aggregate's records share a partition and carry it as their key, and per
// aggregate the order in which events first appear is the write order.
func verify(written map[string]int64, records []record, complete bool) Verification {
	v := Verification{CompleteRequired: complete}
	for agg, n := range written {
		if agg != probeAggregate {
			v.Expected += int(n)
		}
	}
	recs := slices.Clone(records)
	slices.SortStableFunc(recs, func(a, b record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	problem := func(format string, args ...any) {
		if v.FirstProblem == "" {
			v.FirstProblem = fmt.Sprintf(format, args...)
		}
	}
	seen := map[eventKey]bool{}
	lastFirst := map[string]int64{}
	partitionOf := map[string]int32{}
	split := map[string]bool{}
	for _, r := range recs {
		if r.Agg == "" {
			v.Unparsed++
			problem("record at partition %d offset %d carries no aggregate and sequence", r.Partition, r.Offset)
			continue
		}
		if r.Agg == probeAggregate {
			continue
		}
		if r.Key != r.Agg {
			v.KeyMismatches++
			problem("record of %s/%d has key %q", r.Agg, r.Seq, r.Key)
		}
		if p, ok := partitionOf[r.Agg]; !ok {
			partitionOf[r.Agg] = r.Partition
		} else if p != r.Partition && !split[r.Agg] {
			split[r.Agg] = true
			v.KeysSplit++
			problem("aggregate %s is on partitions %d and %d", r.Agg, p, r.Partition)
		}
		k := eventKey{r.Agg, r.Seq}
		if seen[k] {
			v.Duplicates++
			continue
		}
		seen[k] = true
		if r.Seq < 1 || r.Seq > written[r.Agg] {
			v.Unexpected++
			problem("event %s/%d on the topic was never written", r.Agg, r.Seq)
			continue
		}
		v.Delivered++
		if r.Seq < lastFirst[r.Agg] {
			v.OrderViolations++
			problem("aggregate %s: event %d first appeared after event %d", r.Agg, r.Seq, lastFirst[r.Agg])
			continue
		}
		lastFirst[r.Agg] = r.Seq
	}
	if complete {
		v.Missing = v.Expected - v.Delivered
		if v.Missing > 0 {
			problem("%d of %d written events are not on the topic (first: %s)", v.Missing, v.Expected, firstMissing(written, seen))
		}
	}
	v.OK = v.Missing == 0 && v.OrderViolations == 0 && v.KeysSplit == 0 && v.KeyMismatches == 0 &&
		v.Unparsed == 0 && v.Unexpected == 0
	return v
}

// firstMissing names one written event absent from seen, the smallest by
// aggregate then sequence, so reports are stable.
func firstMissing(written map[string]int64, seen map[eventKey]bool) string {
	aggs := make([]string, 0, len(written))
	for agg := range written {
		aggs = append(aggs, agg)
	}
	slices.Sort(aggs)
	for _, agg := range aggs {
		if agg == probeAggregate {
			continue
		}
		for s := int64(1); s <= written[agg]; s++ {
			if !seen[eventKey{agg, s}] {
				return fmt.Sprintf("%s/%d", agg, s)
			}
		}
	}
	return "none"
}
