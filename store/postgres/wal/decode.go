package wal

import (
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
)

// outboxTable is the table the reader decodes.
const outboxTable = "outbox_events"

// The columns of outbox_events a store.Event is made of, by name.
const (
	colID = iota
	colAggregateType
	colAggregateID
	colAggregateSeq
	colEventType
	colSchemaVersion
	colPayload
	colHeaders
	colOccurredAt
	colCount
)

var columnNames = [colCount]string{
	colID: "id", colAggregateType: "aggregate_type", colAggregateID: "aggregate_id",
	colAggregateSeq: "aggregate_seq", colEventType: "event_type", colSchemaVersion: "schema_version",
	colPayload: "payload", colHeaders: "headers", colOccurredAt: "occurred_at",
}

// columnIndex locates each needed column in one version of outbox_events'
// relation message: a migration that adds, drops or reorders columns
// makes the server send a new one, and so a new index.
type columnIndex struct {
	at  [colCount]int
	oid [colCount]uint32
	// fields and fieldsOID locate colFields, fields -1 when the table has
	// none.
	fields    int
	fieldsOID uint32
}

// colFields is the optional column of the fields a foreign table's copy
// brings (migration 8): rows written before it have none.
const colFields = "fields"

func newColumnIndex(rel *pglogrepl.RelationMessage) (*columnIndex, error) {
	ix := &columnIndex{fields: -1}
	for c := range ix.at {
		ix.at[c] = -1
	}
	for i, col := range rel.Columns {
		if col.Name == colFields {
			ix.fields, ix.fieldsOID = i, col.DataType
		}
		for c, want := range columnNames {
			if col.Name == want {
				ix.at[c], ix.oid[c] = i, col.DataType
			}
		}
	}
	for c, i := range ix.at {
		if i < 0 {
			return nil, fmt.Errorf("the relation of %s.%s sent by the server has no column %s", rel.Namespace, rel.RelationName, columnNames[c])
		}
	}
	return ix, nil
}

// decoder turns inserted tuples into events; pgtype's map knows every
// built-in type's binary and text forms, so a column whose type an
// operator changed (json headers, text ids) still decodes.
type decoder struct {
	types *pgtype.Map
}

func newDecoder() *decoder { return &decoder{types: pgtype.NewMap()} }

// event turns one inserted tuple into the store.Event the polling path's
// claim would return for it: the same bytes, the same headers map, the
// same UTC time, decoded by the same store.RawEvent.Decode, so a value
// another writer got wrong is the event's Defect (the relay quarantines
// it), not an error of the stream. Only a tuple herald cannot read at all
// (a NULL or a value its column's type rules out) is an error. Attempts is
// 0: nothing claimed it.
func (d *decoder) event(ix *columnIndex, tuple *pglogrepl.TupleData) (store.Event, error) {
	if tuple == nil {
		return store.Event{}, fmt.Errorf("an insert into %s without its new row", outboxTable)
	}
	var raw store.RawEvent
	var err error
	scan := func(c int, dst any) {
		if err != nil {
			return
		}
		err = d.scan(ix, tuple, c, dst)
	}
	scan(colID, &raw.ID)
	scan(colAggregateType, &raw.AggregateType)
	scan(colAggregateID, &raw.AggregateID)
	scan(colEventType, &raw.EventType)
	var seq int64
	scan(colAggregateSeq, &seq)
	scan(colSchemaVersion, &raw.SchemaVersion)
	scan(colPayload, &raw.Payload)
	var occurred time.Time
	scan(colOccurredAt, &occurred)
	if err == nil {
		if col := tuple.Columns[ix.at[colHeaders]]; col.DataType != pglogrepl.TupleDataTypeNull {
			scan(colHeaders, &raw.Headers)
		}
	}
	if err == nil && ix.fields >= 0 && ix.fields < len(tuple.Columns) &&
		tuple.Columns[ix.fields].DataType != pglogrepl.TupleDataTypeNull {
		err = d.scanColumn(tuple, ix.fields, ix.fieldsOID, colFields, &raw.Fields)
	}
	if err != nil {
		return store.Event{ID: raw.ID}, fmt.Errorf("event %s: %w", raw.ID, err)
	}
	if seq <= 0 {
		return store.Event{ID: raw.ID}, fmt.Errorf("event %s: column aggregate_seq is %d", raw.ID, seq)
	}
	raw.AggregateSeq = uint64(seq)
	e := raw.Decode()
	e.OccurredAt = occurred.UTC()
	e.Bucket = postgres.Dialect{}.BucketOf(e.AggregateType, e.AggregateID)
	return e, nil
}

// scan decodes column c of tuple into dst (a copy: the message's buffer
// is the connection's, reused by the next read).
func (d *decoder) scan(ix *columnIndex, tuple *pglogrepl.TupleData, c int, dst any) error {
	return d.scanColumn(tuple, ix.at[c], ix.oid[c], columnNames[c], dst)
}

// scanColumn decodes the i-th column of tuple, called name and of type
// oid, into dst.
func (d *decoder) scanColumn(tuple *pglogrepl.TupleData, i int, oid uint32, name string, dst any) error {
	if i >= len(tuple.Columns) {
		return fmt.Errorf("column %s is missing from the row (%d columns)", name, len(tuple.Columns))
	}
	col := tuple.Columns[i]
	var format int16
	switch col.DataType {
	case pglogrepl.TupleDataTypeBinary:
		format = pgtype.BinaryFormatCode
	case pglogrepl.TupleDataTypeText:
		format = pgtype.TextFormatCode
	case pglogrepl.TupleDataTypeNull:
		return fmt.Errorf("column %s is NULL", name)
	default:
		return fmt.Errorf("column %s: the server sent no value (kind %q)", name, col.DataType)
	}
	if err := d.types.Scan(oid, format, col.Data, dst); err != nil {
		return fmt.Errorf("column %s: %w", name, err)
	}
	if b, ok := dst.(*[]byte); ok {
		*b = append([]byte(nil), *b...)
	}
	return nil
}
