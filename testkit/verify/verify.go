package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Event is a committed outbox event as the checker needs it.
type Event struct {
	ID            string
	AggregateType string
	AggregateID   string
	// Seq is the event's aggregate_seq: its position in the aggregate.
	Seq uint64
}

// Aggregate names an aggregate.
type Aggregate struct {
	Type, ID string
}

func (a Aggregate) String() string { return a.Type + "/" + a.ID }

// Position is where a record sits on its topic.
type Position struct {
	Partition int32
	Offset    int64
}

func (p Position) String() string { return fmt.Sprintf("%d@%d", p.Partition, p.Offset) }

// before orders positions of one partition by offset (and, for reports
// only, different partitions by number).
func (p Position) before(q Position) bool {
	if p.Partition != q.Partition {
		return p.Partition < q.Partition
	}
	return p.Offset < q.Offset
}

// Record is one record read from the topic.
type Record struct {
	Topic string
	Position
	// Key is the record key (the aggregate id); HasKey is false for a
	// record without one.
	Key    string
	HasKey bool
	// Headers holds the record headers (the first value of a repeated key).
	Headers map[string]string
	// HeaderEventID is the herald-event-id header.
	HeaderEventID string
	// PayloadEventID is the envelope's event_id.
	PayloadEventID string
}

// EventID is the record's event id: the header, or the envelope's when the
// header is missing.
func (r Record) EventID() string {
	if r.HeaderEventID != "" {
		return r.HeaderEventID
	}
	return r.PayloadEventID
}

// Input is what Check compares.
type Input struct {
	// Committed are the events the topic must hold (at least once).
	Committed []Event
	// RolledBack are ids of events whose transaction rolled back (or that
	// must otherwise never appear): any copy on the topic is a ghost.
	RolledBack []string
	// Records are the topic's records, in any order.
	Records []Record
}

// OrderViolation is a pair of consecutive events of an aggregate whose
// first copies reached the topic in the wrong order.
type OrderViolation struct {
	Aggregate Aggregate
	// Earlier is the event with the lower aggregate_seq, which should have
	// reached the topic first.
	Earlier, Later       Event
	EarlierPos, LaterPos Position
}

func (v OrderViolation) String() string {
	return fmt.Sprintf("aggregate %s: #%d (%s) first at %s, after #%d (%s) first at %s",
		v.Aggregate, v.Earlier.Seq, v.Earlier.ID, v.EarlierPos, v.Later.Seq, v.Later.ID, v.LaterPos)
}

// SplitAggregate is an aggregate whose records are on more than one
// partition: its order cannot hold for a consumer.
type SplitAggregate struct {
	Aggregate  Aggregate
	Partitions []int32
}

func (s SplitAggregate) String() string {
	return fmt.Sprintf("aggregate %s on partitions %v", s.Aggregate, s.Partitions)
}

// Malformed is a record that is not a well-formed copy of its event.
type Malformed struct {
	Record Record
	Reason string
}

func (m Malformed) String() string {
	return fmt.Sprintf("record %s (event %q): %s", m.Record.Position, m.Record.EventID(), m.Reason)
}

// Report is the outcome of Check.
type Report struct {
	// Committed, RolledBack and Records count the inputs.
	Committed, RolledBack, Records int
	// Missing are committed events with no record on the topic.
	Missing []Event
	// Ghosts are records of rolled-back events.
	Ghosts []Record
	// Strangers are records whose event id is neither committed nor
	// rolled back.
	Strangers []Record
	// Duplicates counts records beyond the first of each event.
	Duplicates int
	// DuplicatedEvents counts events with more than one record.
	DuplicatedEvents int
	// OrderViolations lists consecutive present events of an aggregate
	// whose first copies are out of aggregate_seq order.
	OrderViolations []OrderViolation
	// SplitAggregates lists aggregates found on several partitions.
	SplitAggregates []SplitAggregate
	// Malformed lists records without an event id, whose header and
	// envelope disagree, or whose key is not the aggregate id.
	Malformed []Malformed
	// Copies counts the records of each event id seen on the topic.
	Copies map[string]int
	// First is the position of each event id's first copy.
	First map[string]Position
}

// OK reports whether the topic holds every committed event, no ghost, no
// stranger, no malformed record, and every aggregate in order on one
// partition. Duplicates are allowed (delivery is at least once).
func (r *Report) OK() bool {
	return len(r.Missing) == 0 && len(r.Ghosts) == 0 && len(r.Strangers) == 0 &&
		len(r.OrderViolations) == 0 && len(r.SplitAggregates) == 0 && len(r.Malformed) == 0
}

// Problems lists what is wrong, at most perKind lines per kind of problem.
func (r *Report) Problems(perKind int) []string {
	var out []string
	add := func(kind string, n int, line func(i int) string) {
		if n == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: %d", kind, n))
		for i := 0; i < n && i < perKind; i++ {
			out = append(out, "  "+line(i))
		}
		if n > perKind {
			out = append(out, fmt.Sprintf("  ... and %d more", n-perKind))
		}
	}
	add("missing (committed, not on the topic)", len(r.Missing), func(i int) string {
		e := r.Missing[i]
		return fmt.Sprintf("%s %s #%d", e.ID, Aggregate{e.AggregateType, e.AggregateID}, e.Seq)
	})
	add("ghosts (rolled back, on the topic)", len(r.Ghosts), func(i int) string {
		return fmt.Sprintf("%s at %s", r.Ghosts[i].EventID(), r.Ghosts[i].Position)
	})
	add("strangers (unknown event id)", len(r.Strangers), func(i int) string {
		return fmt.Sprintf("%q at %s", r.Strangers[i].EventID(), r.Strangers[i].Position)
	})
	add("order violations", len(r.OrderViolations), func(i int) string { return r.OrderViolations[i].String() })
	add("aggregates split across partitions", len(r.SplitAggregates), func(i int) string { return r.SplitAggregates[i].String() })
	add("malformed records", len(r.Malformed), func(i int) string { return r.Malformed[i].String() })
	return out
}

// Summary is a one-line account of the check.
func (r *Report) Summary() string {
	return fmt.Sprintf("%d committed, %d rolled back, %d records: %d missing, %d ghosts, %d strangers, "+
		"%d duplicates (%d events), %d order violations, %d split aggregates, %d malformed",
		r.Committed, r.RolledBack, r.Records, len(r.Missing), len(r.Ghosts), len(r.Strangers),
		r.Duplicates, r.DuplicatedEvents, len(r.OrderViolations), len(r.SplitAggregates), len(r.Malformed))
}

// String is the summary followed by up to ten lines per kind of problem.
func (r *Report) String() string {
	lines := append([]string{r.Summary()}, r.Problems(10)...)
	return strings.Join(lines, "\n")
}

// Check compares the topic's records with the committed and rolled-back
// events.
func Check(in Input) *Report {
	r := &Report{
		Committed: len(in.Committed), RolledBack: len(in.RolledBack), Records: len(in.Records),
		Copies: map[string]int{}, First: map[string]Position{},
	}
	committed := make(map[string]Event, len(in.Committed))
	for _, e := range in.Committed {
		committed[e.ID] = e
	}
	rolledBack := make(map[string]bool, len(in.RolledBack))
	for _, id := range in.RolledBack {
		rolledBack[id] = true
	}

	partitions := map[Aggregate]map[int32]bool{}
	for _, rec := range in.Records {
		id := rec.EventID()
		switch {
		case id == "":
			r.Malformed = append(r.Malformed, Malformed{rec, "no herald-event-id header and no envelope event_id"})
			continue
		case rec.HeaderEventID != "" && rec.PayloadEventID != "" && rec.HeaderEventID != rec.PayloadEventID:
			r.Malformed = append(r.Malformed, Malformed{rec,
				fmt.Sprintf("header event id %q, envelope event_id %q", rec.HeaderEventID, rec.PayloadEventID)})
		}
		r.Copies[id]++
		if first, seen := r.First[id]; !seen || rec.Position.before(first) {
			r.First[id] = rec.Position
		}
		if r.Copies[id] > 1 {
			r.Duplicates++
			if r.Copies[id] == 2 {
				r.DuplicatedEvents++
			}
		}
		e, ok := committed[id]
		switch {
		case rolledBack[id]:
			r.Ghosts = append(r.Ghosts, rec)
			continue
		case !ok:
			r.Strangers = append(r.Strangers, rec)
			continue
		}
		if !rec.HasKey || rec.Key != e.AggregateID {
			r.Malformed = append(r.Malformed, Malformed{rec, fmt.Sprintf("key %q, aggregate id %q", rec.Key, e.AggregateID)})
		}
		agg := Aggregate{e.AggregateType, e.AggregateID}
		if partitions[agg] == nil {
			partitions[agg] = map[int32]bool{}
		}
		partitions[agg][rec.Partition] = true
	}

	byAggregate := map[Aggregate][]Event{}
	for _, e := range in.Committed {
		if r.Copies[e.ID] == 0 {
			r.Missing = append(r.Missing, e)
			continue
		}
		agg := Aggregate{e.AggregateType, e.AggregateID}
		byAggregate[agg] = append(byAggregate[agg], e)
	}
	aggs := make([]Aggregate, 0, len(byAggregate))
	for agg := range byAggregate {
		aggs = append(aggs, agg)
	}
	slices.SortFunc(aggs, func(a, b Aggregate) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID)) })
	for _, agg := range aggs {
		if parts := partitions[agg]; len(parts) > 1 {
			s := SplitAggregate{Aggregate: agg}
			for p := range parts {
				s.Partitions = append(s.Partitions, p)
			}
			slices.Sort(s.Partitions)
			r.SplitAggregates = append(r.SplitAggregates, s)
			continue // offsets of different partitions say nothing about order
		}
		events := byAggregate[agg]
		slices.SortFunc(events, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })
		for i := 1; i < len(events); i++ {
			prev, cur := events[i-1], events[i]
			if pp, cp := r.First[prev.ID], r.First[cur.ID]; !pp.before(cp) {
				r.OrderViolations = append(r.OrderViolations, OrderViolation{
					Aggregate: agg, Earlier: prev, Later: cur, EarlierPos: pp, LaterPos: cp,
				})
			}
		}
	}
	slices.SortFunc(r.Missing, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.AggregateType, b.AggregateType), cmp.Compare(a.AggregateID, b.AggregateID), cmp.Compare(a.Seq, b.Seq))
	})
	return r
}
