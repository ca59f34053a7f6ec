package binlog

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
	"github.com/herald-outbox/herald/store/mysql"
)

// errNoColumnNames is the decoding error of a table map without column
// names.
var errNoColumnNames = errors.New("the binlog's table map of outbox_events carries no column names: " +
	"set binlog_row_metadata=FULL on the server (rows are decoded by column name)")

// columnIndex locates each needed column in one version of outbox_events'
// table map: a migration that adds, drops or reorders columns yields a new
// table map, and so a new index.
type columnIndex struct {
	table *replication.TableMapEvent
	changestream.Columns
}

func newColumnIndex(tm *replication.TableMapEvent) (*columnIndex, error) {
	names := tm.ColumnNameString()
	if len(names) == 0 {
		return nil, errNoColumnNames
	}
	cols, err := changestream.LocateColumns(names)
	if err != nil {
		return nil, fmt.Errorf("the binlog's table map of outbox_events has %w", err)
	}
	return &columnIndex{table: tm, Columns: cols}, nil
}

// checkPresent fails when the row image of e lacks a needed column, which
// only a row image other than FULL does.
func (ix *columnIndex) checkPresent(e *replication.RowsEvent) error {
	for c, i := range ix.At {
		if i >= len(e.ColumnBitmap1)*8 || e.ColumnBitmap1[i/8]&(1<<(i%8)) == 0 {
			return fmt.Errorf("an outbox_events row image lacks column %s: set binlog_row_image=FULL on the server", changestream.Column(c))
		}
	}
	return nil
}

// event turns one inserted row into the store.Event the polling path's
// claim would return for it (changestream.Event): the same bytes, the same
// headers map, the same UTC time. Only a row image herald cannot read at
// all (a NULL or a type the table's definition rules out) is an error.
func (ix *columnIndex) event(row []any) (store.Event, error) {
	var raw store.RawEvent
	var err error
	col := func(c changestream.Column) any { return row[ix.At[c]] }
	text := func(c changestream.Column) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = asText(col(c), c.String())
		return s
	}
	raw.ID = text(changestream.ColID)
	raw.AggregateType = text(changestream.ColAggregateType)
	raw.AggregateID = text(changestream.ColAggregateID)
	raw.EventType = text(changestream.ColEventType)
	if err != nil {
		return store.Event{}, err
	}
	fail := func(err error) (store.Event, error) {
		return store.Event{ID: raw.ID}, fmt.Errorf("event %s: %w", raw.ID, err)
	}
	if raw.AggregateSeq, err = asUint(col(changestream.ColAggregateSeq), 64, changestream.ColAggregateSeq.String()); err != nil {
		return fail(err)
	}
	v, err := asUint(col(changestream.ColSchemaVersion), 16, changestream.ColSchemaVersion.String())
	if err != nil {
		return fail(err)
	}
	raw.SchemaVersion = int64(v)
	if raw.Payload, err = asBytes(col(changestream.ColPayload), changestream.ColPayload.String()); err != nil {
		return fail(err)
	}
	if h := col(changestream.ColHeaders); h != nil {
		if raw.Headers, err = asBytes(h, changestream.ColHeaders.String()); err != nil {
			return fail(err)
		}
	}
	if ix.Fields >= 0 && ix.Fields < len(row) && row[ix.Fields] != nil {
		if raw.Fields, err = asBytes(row[ix.Fields], changestream.FieldsColumn); err != nil {
			return fail(err)
		}
	}
	occurred, err := asTime(col(changestream.ColOccurredAt), changestream.ColOccurredAt.String())
	if err != nil {
		return fail(err)
	}
	return changestream.Event(raw, occurred, mysql.Dialect{}.BucketOf), nil
}

func asText(v any, col string) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case nil:
		return "", fmt.Errorf("column %s is NULL", col)
	}
	return "", fmt.Errorf("column %s: unexpected %T in the row event", col, v)
}

// asBytes returns a copy: the row event's buffer is not ours to keep.
func asBytes(v any, col string) ([]byte, error) {
	switch v := v.(type) {
	case []byte:
		return append([]byte(nil), v...), nil
	case string:
		return []byte(v), nil
	case nil:
		return nil, fmt.Errorf("column %s is NULL", col)
	}
	return nil, fmt.Errorf("column %s: unexpected %T in the row event", col, v)
}

// asUint reads an unsigned integer column of the given width. Without
// signedness metadata the decoder hands out signed values; their bits are
// the unsigned value's.
func asUint(v any, bits int, col string) (uint64, error) {
	var u uint64
	switch v := v.(type) {
	case uint8:
		u = uint64(v)
	case uint16:
		u = uint64(v)
	case uint32:
		u = uint64(v)
	case uint64:
		u = v
	case int8:
		u = uint64(uint8(v))
	case int16:
		u = uint64(uint16(v))
	case int32:
		u = uint64(uint32(v))
	case int64:
		u = uint64(v)
	case nil:
		return 0, fmt.Errorf("column %s is NULL", col)
	default:
		return 0, fmt.Errorf("column %s: unexpected %T in the row event", col, v)
	}
	if bits < 64 && u >= 1<<bits {
		return 0, fmt.Errorf("column %s: %d does not fit %d bits", col, u, bits)
	}
	return u, nil
}

// datetimeLayout is DATETIME(6) as the decoder renders it (fewer digits for
// a column of lower precision are accepted too).
const datetimeLayout = "2006-01-02 15:04:05.999999"

// asTime reads a DATETIME column, which holds UTC (herald writes it so).
func asTime(v any, col string) (time.Time, error) {
	switch v := v.(type) {
	case string:
		t, err := time.ParseInLocation(datetimeLayout, v, time.UTC)
		if err != nil {
			return time.Time{}, fmt.Errorf("column %s: %q is not a date and time", col, v)
		}
		return t, nil
	case time.Time:
		return v.UTC(), nil
	case nil:
		return time.Time{}, fmt.Errorf("column %s is NULL", col)
	}
	return time.Time{}, fmt.Errorf("column %s: unexpected %T in the row event", col, v)
}
