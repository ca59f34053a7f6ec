package wal

import (
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/postgres"
)

// columnIndex locates each needed column in one version of outbox_events'
// relation message, and its type: a migration that adds, drops or
// reorders columns makes the server send a new one, and so a new index.
type columnIndex struct {
	changestream.Columns
	oid [changestream.ColCount]uint32
	// fieldsOID is the type of changestream.FieldsColumn, when Fields
	// locates one.
	fieldsOID uint32
}

func newColumnIndex(rel *pglogrepl.RelationMessage) (*columnIndex, error) {
	names := make([]string, len(rel.Columns))
	for i, col := range rel.Columns {
		names[i] = col.Name
	}
	cols, err := changestream.LocateColumns(names)
	if err != nil {
		return nil, fmt.Errorf("the relation of %s.%s sent by the server has %w", rel.Namespace, rel.RelationName, err)
	}
	ix := &columnIndex{Columns: cols}
	for c, i := range cols.At {
		ix.oid[c] = rel.Columns[i].DataType
	}
	if cols.Fields >= 0 {
		ix.fieldsOID = rel.Columns[cols.Fields].DataType
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
		return store.Event{}, fmt.Errorf("an insert into %s without its new row", changestream.OutboxTable)
	}
	var raw store.RawEvent
	var err error
	scan := func(c changestream.Column, dst any) {
		if err != nil {
			return
		}
		err = d.scan(ix, tuple, c, dst)
	}
	scan(changestream.ColID, &raw.ID)
	scan(changestream.ColAggregateType, &raw.AggregateType)
	scan(changestream.ColAggregateID, &raw.AggregateID)
	scan(changestream.ColEventType, &raw.EventType)
	var seq int64
	scan(changestream.ColAggregateSeq, &seq)
	scan(changestream.ColSchemaVersion, &raw.SchemaVersion)
	scan(changestream.ColPayload, &raw.Payload)
	var occurred time.Time
	scan(changestream.ColOccurredAt, &occurred)
	if err == nil {
		if i := ix.At[changestream.ColHeaders]; i >= len(tuple.Columns) || tuple.Columns[i].DataType != pglogrepl.TupleDataTypeNull {
			scan(changestream.ColHeaders, &raw.Headers)
		}
	}
	if err == nil && ix.Fields >= 0 && ix.Fields < len(tuple.Columns) &&
		tuple.Columns[ix.Fields].DataType != pglogrepl.TupleDataTypeNull {
		err = d.scanColumn(tuple, ix.Fields, ix.fieldsOID, changestream.FieldsColumn, &raw.Fields)
	}
	if err != nil {
		return store.Event{ID: raw.ID}, fmt.Errorf("event %s: %w", raw.ID, err)
	}
	if seq <= 0 {
		return store.Event{ID: raw.ID}, fmt.Errorf("event %s: column aggregate_seq is %d", raw.ID, seq)
	}
	raw.AggregateSeq = uint64(seq)
	return changestream.Event(raw, occurred, postgres.Dialect{}.BucketOf), nil
}

// scan decodes column c of tuple into dst (a copy: the message's buffer
// is the connection's, reused by the next read).
func (d *decoder) scan(ix *columnIndex, tuple *pglogrepl.TupleData, c changestream.Column, dst any) error {
	return d.scanColumn(tuple, ix.At[c], ix.oid[c], c.String(), dst)
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
