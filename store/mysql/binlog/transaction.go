package binlog

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

// txn is a transaction (or a chunk, or a heartbeat) the assembly
// completed: changestream.Tx's fields, with its position typed (zero for a
// chunk).
type txn struct {
	events []store.Event
	at     Position
	commit time.Time
}

// cursor is where the reader stands in the binlog: after the last
// transaction it read, returned or not.
type cursor struct {
	kind    kind
	mariadb mariadbState
	mysql   *gomysql.MysqlGTIDSet
	// file and offset are the binlog coordinates after the last transaction
	// read (the position itself for kindFile; for GTID kinds the file is
	// known once the stream named it).
	file   string
	offset uint32
	// commit is the commit time of the last transaction read.
	commit time.Time
	// moved says the cursor is past the position Next last returned.
	moved bool
}

// cursorAt is a cursor standing at p.
func cursorAt(p Position) cursor {
	c := cursor{kind: p.kind}
	switch p.kind {
	case kindMariaDB:
		c.mariadb, _ = parseMariaDBGTIDs(p.gtid) // p came from ParsePosition or a cursor: valid
	case kindMySQL:
		c.mysql, _ = parseMySQLGTIDs(p.gtid)
	case kindFile:
		c.file, c.offset = p.file, p.offset
	}
	return c
}

func (c *cursor) position() Position {
	switch c.kind {
	case kindMariaDB:
		return Position{kind: kindMariaDB, gtid: c.mariadb.String()}
	case kindMySQL:
		return Position{kind: kindMySQL, gtid: c.mysql.String()}
	}
	return Position{kind: kindFile, file: c.file, offset: c.offset}
}

// group is the transaction being read: from its GTID event (or BEGIN) to
// its commit.
type group struct {
	open bool
	// began says a BEGIN statement is open: other statements are inside the
	// transaction, not transactions of their own.
	began bool
	// standalone is MariaDB's flag for a one-statement group without a
	// commit event (DDL).
	standalone bool
	// savepoints are the transaction's savepoints, oldest first, each with
	// the number of events before it.
	savepoints []savepoint
	mariadb    *mariadbGTID
	mysql      *mysqlGTID
	// commitTime is MySQL 8's commit timestamp from the GTID event.
	commitTime time.Time
	events     []store.Event
	// whole: the binlog says the group committed whole (a MariaDB GTID
	// event flagged transactional, not XA), so its rows may be handed out
	// before its end; chunked says some were.
	whole   bool
	chunked bool
	// start is the position before the group.
	start Position
}

// preparedXA is the first half of an XA transaction: its outbox rows,
// held until its XA COMMIT or XA ROLLBACK, and the position before it.
type preparedXA struct {
	xid    string
	events []store.Event
	before Position
}

// MariaDB's GTID event flags for the two halves of an XA transaction
// (go-mysql names only the others).
const (
	flPreparedXA  = 64
	flCompletedXA = 128
)

type savepoint struct {
	name   string
	events int
}

type mysqlGTID struct {
	sid uuid.UUID
	tag gomysql.Tag
	gno int64
}

// handle feeds one binlog event to the transaction assembly; ok says it
// completed a Tx to return.
func (r *Reader) handle(ev *replication.BinlogEvent) (tx txn, ok bool, err error) {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		r.cur.file, r.cur.offset = string(e.NextLogName), uint32(e.Position)
		r.lag.rotate(r.cur.file, r.cur.offset)
		return txn{}, false, nil
	case *replication.MariadbGTIDEvent:
		r.begin()
		r.group.mariadb = &mariadbGTID{domain: e.GTID.DomainID, server: e.GTID.ServerID, seq: e.GTID.SequenceNumber}
		r.group.standalone = e.IsStandalone()
		// A transactional group is logged at its commit, only if it
		// commits, with nothing a ROLLBACK TO undid (that is logged only
		// beside a non-transactional table): every row in it counts.
		r.group.whole = e.Flags&replication.BINLOG_MARIADB_FL_TRANSACTIONAL != 0 && e.Flags&(flPreparedXA|flCompletedXA) == 0
		// MariaDB writes no BEGIN (nor XA START): the GTID event of a group
		// that is not a single statement opens the transaction.
		r.group.began = !r.group.standalone
		return txn{}, false, nil
	case *replication.GTIDEvent:
		r.beginMySQL(e, gomysql.Tag{})
		return txn{}, false, nil
	case *replication.GtidTaggedLogEvent:
		r.beginMySQL(&e.GTIDEvent, e.Tag)
		return txn{}, false, nil
	case *replication.QueryEvent:
		return r.query(h, string(e.Query))
	case *replication.XIDEvent:
		tx, ok := r.commit(h, true)
		return tx, ok, nil
	case *replication.RowsEvent:
		if err := r.rows(e); err != nil {
			return txn{}, false, err
		}
		if g := &r.group; g.whole && len(g.events) >= r.cfg.ChunkEvents {
			chunk := g.events
			g.events, g.chunked = nil, true
			return txn{events: chunk}, true, nil
		}
		return txn{}, false, nil
	case *replication.TransactionPayloadEvent:
		// MySQL's compressed transaction: its events, at the payload's end.
		for _, inner := range e.Events {
			inner.Header.LogPos = h.LogPos
			if tx, ok, err := r.handle(inner); err != nil || ok {
				return tx, ok, err
			}
		}
		return txn{}, false, nil
	case *replication.HeartbeatEvent:
		// The server has nothing more to send: the reader is at the head.
		r.lag.caughtUp(e.Filename, h.LogPos)
		if r.cur.moved && !r.group.open {
			return r.heartbeat(), true, nil
		}
		return txn{}, false, nil
	case *replication.GenericEvent:
		if h.EventType == replication.XA_PREPARE_LOG_EVENT {
			return r.endXAPrepare(h, e.Data)
		}
	}
	if !r.group.open && h.LogPos > 0 {
		r.lag.advance(r.cur.file, h.LogPos)
	}
	return txn{}, false, nil
}

// begin opens a group; one still open was never committed in this stream
// (the stream cannot hold that), so it is dropped with a warning.
func (r *Reader) begin() {
	if r.group.open {
		r.cfg.Logger.Warn("binlog: transaction without commit event dropped", "events", len(r.group.events),
			"position", r.cur.position().String())
	}
	r.group = group{open: true, start: r.cur.position()}
}

func (r *Reader) beginMySQL(e *replication.GTIDEvent, tag gomysql.Tag) {
	r.begin()
	if sid, err := uuid.FromBytes(e.SID); err == nil && sid != uuid.Nil { // anonymous GTIDs have a nil SID
		r.group.mysql = &mysqlGTID{sid: sid, tag: tag, gno: e.GNO}
	}
	if e.ImmediateCommitTimestamp > 0 {
		r.group.commitTime = e.ImmediateCommitTime().UTC()
	}
}

// query handles a statement: BEGIN, COMMIT, ROLLBACK, or a statement of its
// own (DDL, which is a transaction by itself).
func (r *Reader) query(h *replication.EventHeader, q string) (txn, bool, error) {
	switch stmt := strings.ToUpper(strings.TrimSpace(q)); {
	case stmt == "BEGIN", strings.HasPrefix(stmt, "XA START"):
		if !r.group.open {
			r.begin() // a binlog without GTID events
		}
		r.group.began = true
	case r.group.open && strings.HasPrefix(stmt, "SAVEPOINT "):
		r.group.savepoints = append(r.group.savepoints,
			savepoint{name: savepointName(stmt, "SAVEPOINT "), events: len(r.group.events)})
	case r.group.open && strings.HasPrefix(stmt, "ROLLBACK TO "):
		// Logged only when the transaction also changed a non-transactional
		// table after the savepoint: the outbox rows between the savepoint
		// and here are in the binlog but were rolled back.
		r.group.rollbackTo(savepointName(strings.Replace(stmt, "ROLLBACK TO SAVEPOINT ", "ROLLBACK TO ", 1), "ROLLBACK TO "))
	case strings.HasPrefix(stmt, "XA COMMIT"):
		// The second half of a prepared XA transaction: its rows commit
		// here, at this position. Or XA COMMIT ... ONE PHASE: the
		// transaction commits in this group.
		if !r.group.open {
			r.begin()
		}
		if p, ok := r.takePrepared(xaID(stmt, "XA COMMIT")); ok {
			r.group.events = append(p.events, r.group.events...)
			tx, ok := r.commit(h, true)
			return tx, ok, nil
		}
		tx, ok := r.commit(h, r.group.began)
		return tx, ok, nil
	case strings.HasPrefix(stmt, "XA ROLLBACK"):
		if !r.group.open {
			r.begin()
		}
		r.takePrepared(xaID(stmt, "XA ROLLBACK"))
		tx, ok := r.commit(h, false)
		return tx, ok, nil
	case stmt == "COMMIT":
		tx, ok := r.commit(h, true)
		return tx, ok, nil
	case stmt == "ROLLBACK":
		// Only a transaction that changed a non-transactional table is
		// logged with ROLLBACK; its outbox rows (InnoDB) were undone.
		tx, ok := r.commit(h, false)
		return tx, ok, nil
	case r.group.began && !r.group.standalone, strings.HasPrefix(stmt, "XA END"):
		// A statement inside BEGIN ... COMMIT (SAVEPOINT and the like) or
		// XA START ... XA END.
	default:
		// DDL and other statements that are their own transaction, such as
		// an ALTER TABLE outbox_events: the next table map tells its
		// result.
		if !r.group.open {
			r.begin()
		}
		tx, ok := r.commit(h, false)
		return tx, ok, nil
	}
	return txn{}, false, nil
}

// savepointName returns the savepoint named after prefix in stmt, unquoted
// (stmt is upper case, as savepoint names compare case-insensitively).
func savepointName(stmt, prefix string) string {
	name := strings.TrimSpace(strings.TrimPrefix(stmt, prefix))
	if len(name) >= 2 && name[0] == '`' && name[len(name)-1] == '`' {
		name = strings.ReplaceAll(name[1:len(name)-1], "``", "`")
	}
	return name
}

// rollbackTo drops the events inserted after the savepoint name, and the
// savepoints set after it.
func (g *group) rollbackTo(name string) {
	for i := len(g.savepoints) - 1; i >= 0; i-- {
		if sp := g.savepoints[i]; sp.name == name {
			g.events = g.events[:sp.events]
			g.savepoints = g.savepoints[:i+1]
			return
		}
	}
}

// rows decodes the inserts into the outbox; other rows events were left
// undecoded by decodeRows.
func (r *Reader) rows(e *replication.RowsEvent) error {
	if e.Type() != replication.EnumRowsEventTypeInsert || !r.isOutbox(e.Table) {
		return nil
	}
	if r.columns == nil || r.columns.table != e.Table {
		ix, err := newColumnIndex(e.Table)
		if err != nil {
			return fmt.Errorf("binlog: decode %s.%s: %w", r.schema, changestream.OutboxTable, err)
		}
		r.columns = ix
	}
	if err := r.columns.checkPresent(e); err != nil {
		return fmt.Errorf("binlog: decode %s.%s: %w", r.schema, changestream.OutboxTable, err)
	}
	if !r.group.open {
		r.begin()
	}
	for _, row := range e.Rows {
		ev, err := r.columns.event(row)
		if err != nil {
			return fmt.Errorf("binlog: decode %s.%s after %s: %w", r.schema, changestream.OutboxTable, r.cur.position(), err)
		}
		r.group.events = append(r.group.events, ev)
	}
	return nil
}

// isOutbox reports whether tm is the outbox table of the reader's database.
func (r *Reader) isOutbox(tm *replication.TableMapEvent) bool {
	return tm != nil && string(tm.Table) == changestream.OutboxTable && string(tm.Schema) == r.schema
}

// commit ends the open group at the event h: the cursor moves past it, and
// with deliver its events make a Tx. A group without events makes a
// heartbeat when one is due.
func (r *Reader) commit(h *replication.EventHeader, deliver bool) (txn, bool) {
	g := r.group
	r.group = group{}
	if g.mariadb != nil && r.cur.kind == kindMariaDB {
		r.cur.mariadb.add(*g.mariadb)
	}
	if g.mysql != nil && r.cur.kind == kindMySQL {
		r.cur.mysql.AddGTIDWithTag(g.mysql.sid, g.mysql.tag, g.mysql.gno)
	}
	if h.LogPos > 0 {
		r.cur.offset = h.LogPos
	}
	r.cur.commit = g.commitTime
	if r.cur.commit.IsZero() {
		r.cur.commit = time.Unix(int64(h.Timestamp), 0).UTC()
	}
	r.cur.moved = true
	r.reconnect.Progressed()
	r.lag.read(r.cur.file, r.cur.offset, r.cur.commit)
	if deliver && (len(g.events) > 0 || g.chunked) {
		return txn{events: g.events, at: r.position(), commit: r.cur.commit}, true
	}
	if time.Since(r.lastReturn) >= r.cfg.HeartbeatPeriod {
		return r.heartbeat(), true
	}
	return txn{}, false
}

// endXAPrepare ends the first half of an XA transaction. Its rows are
// committed or rolled back later by an XA COMMIT or XA ROLLBACK that
// carries no rows: the reader keeps them until then, and until then hands
// out no position past the one before them (a stream resumed from there
// reads the prepared half again; docs/design.md, "Transactions of any
// size").
func (r *Reader) endXAPrepare(h *replication.EventHeader, data []byte) (txn, bool, error) {
	if g := r.group; len(g.events) > 0 {
		xid, err := preparedXID(data)
		if err != nil {
			return txn{}, false, &changestream.DecodeError{Err: fmt.Errorf("binlog: XA PREPARE at %s: %w", r.cur.position(), err)}
		}
		r.prepared = append(r.prepared, preparedXA{xid: xid, events: g.events, before: g.start})
	}
	tx, ok := r.commit(h, false)
	return tx, ok, nil
}

// preparedXID reads the XA transaction id of an XA_PREPARE_LOG_EVENT's
// body (one_phase, formatID, gtrid and bqual lengths, their bytes) as the
// server writes it in XA COMMIT and XA ROLLBACK, upper case: X'gtrid',X'bqual',formatID.
func preparedXID(data []byte) (string, error) {
	if len(data) < 13 {
		return "", fmt.Errorf("XA_PREPARE event of %d bytes", len(data))
	}
	format := binary.LittleEndian.Uint32(data[1:])
	gtrid, bqual := int(binary.LittleEndian.Uint32(data[5:])), int(binary.LittleEndian.Uint32(data[9:]))
	if gtrid < 0 || bqual < 0 || len(data) < 13+gtrid+bqual {
		return "", fmt.Errorf("XA_PREPARE event of %d bytes names an id of %d+%d bytes", len(data), gtrid, bqual)
	}
	id := data[13:]
	return fmt.Sprintf("X'%X',X'%X',%d", id[:gtrid], id[gtrid:gtrid+bqual], format), nil
}

// takePrepared removes the prepared XA transaction xid and returns it.
func (r *Reader) takePrepared(xid string) (preparedXA, bool) {
	for i, p := range r.prepared {
		if p.xid == xid {
			r.prepared = slices.Delete(r.prepared, i, i+1)
			return p, true
		}
	}
	return preparedXA{}, false
}

// xaID is the XA transaction id after the statement's keyword, as the
// server writes it in each of the transaction's statements (X'..',X'..',n).
func xaID(stmt, keyword string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(stmt, keyword)), "ONE PHASE"))
}

// position is where a stream may resume from now: after the last
// transaction read, or before the oldest XA transaction still prepared.
func (r *Reader) position() Position {
	if len(r.prepared) > 0 {
		return r.prepared[0].before
	}
	return r.cur.position()
}

// heartbeat is a txn without events at the cursor.
func (r *Reader) heartbeat() txn {
	return txn{at: r.position(), commit: r.cur.commit}
}
