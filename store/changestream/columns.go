package changestream

import (
	"fmt"
	"time"

	"github.com/herald-outbox/herald/store"
)

// OutboxTable is the table every reader decodes.
const OutboxTable = "outbox_events"

// Column is one of the columns of outbox_events a store.Event is made of.
type Column int

// The columns a store.Event is made of, each found by name.
const (
	ColID Column = iota
	ColAggregateType
	ColAggregateID
	ColAggregateSeq
	ColEventType
	ColSchemaVersion
	ColPayload
	ColHeaders
	ColOccurredAt
	// ColCount is the number of columns; not a column.
	ColCount
)

var columnNames = [ColCount]string{
	ColID: "id", ColAggregateType: "aggregate_type", ColAggregateID: "aggregate_id",
	ColAggregateSeq: "aggregate_seq", ColEventType: "event_type", ColSchemaVersion: "schema_version",
	ColPayload: "payload", ColHeaders: "headers", ColOccurredAt: "occurred_at",
}

// String is the column's name.
func (c Column) String() string { return columnNames[c] }

// FieldsColumn is the optional column of the fields a foreign table's copy
// brings (migration 8): rows written before it have none.
const FieldsColumn = "fields"

// Columns locates each needed column in one version of outbox_events'
// definition as the stream describes it (a binlog table map, a pgoutput
// relation): a migration that adds, drops or reorders columns makes the
// server describe the table anew, and so a new Columns.
type Columns struct {
	// At is the index of each column in the row.
	At [ColCount]int
	// Fields is the index of FieldsColumn, -1 when the table has none.
	Fields int
}

// LocateColumns finds the columns in names, the table's columns in row
// order; an error names a needed column that is missing.
func LocateColumns(names []string) (Columns, error) {
	c := Columns{Fields: -1}
	for i := range c.At {
		c.At[i] = -1
	}
	for i, name := range names {
		if name == FieldsColumn {
			c.Fields = i
		}
		for col, want := range columnNames {
			if name == want {
				c.At[col] = i
			}
		}
	}
	for col, i := range c.At {
		if i < 0 {
			return Columns{}, fmt.Errorf("no column %s (columns: %v)", Column(col), names)
		}
	}
	return c, nil
}

// Event finishes the store.Event of a decoded row exactly as the polling
// path's claim does: the same store.RawEvent.Decode (a value another
// writer got wrong is the event's Defect, which the relay quarantines, not
// an error of the stream), occurred in UTC, and the bucket bucketOf (the
// dialect's BucketOf) gives it. Attempts is 0: nothing claimed it.
func Event(raw store.RawEvent, occurred time.Time, bucketOf func(aggregateType, aggregateID string) int) store.Event {
	e := raw.Decode()
	e.OccurredAt = occurred.UTC()
	e.Bucket = bucketOf(e.AggregateType, e.AggregateID)
	return e
}
