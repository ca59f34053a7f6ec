package wal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

// confirmEvery is how soon, at most, a newly confirmed position reaches
// the server.
const confirmEvery = time.Second

// result is what the reading goroutine hands to Next.
type result struct {
	tx  changestream.Tx
	err error
}

// Reader streams the committed inserts into one database's outbox_events
// from a PostgreSQL logical replication slot with the built-in pgoutput
// plugin: a changestream.Reader and changestream.Confirmer. Next is called
// from one goroutine; Confirm, Lag and Close from any.
//
// One goroutine owns the replication connection: it reads ahead of Next by
// one transaction (or chunk) and, while Next is not called, still answers
// the server, so a relay busy publishing never lets the server's
// wal_sender_timeout end the connection.
type Reader struct {
	cfg  Config
	conn *pgconn.Config
	// db runs the reader's queries: the caller's pool, not closed here.
	db *sql.DB

	out  chan result
	done chan struct{}
	// err is why the reading goroutine stopped (set before done closes).
	err error

	closing   context.Context
	close     context.CancelFunc
	closeOnce sync.Once
	pollDone  chan struct{}

	// confirmed is the LSN the reader tells the server is flushed: the
	// caller's checkpoint, never past it.
	confirmed atomic.Uint64

	// The reading goroutine's own state.
	// from is the position last handed out whole (or Open's): a new
	// connection starts there.
	from    Position
	columns map[uint32]*columnIndex
	decode  *decoder
	// reconnect paces the connection attempts since the stream last
	// handed out a transaction or a heartbeat.
	reconnect *changestream.Reconnector

	lag lagState
}

var (
	_ changestream.Reader    = (*Reader)(nil)
	_ changestream.Confirmer = (*Reader)(nil)
)

// Open checks cfg's slot (changestream.ErrPositionGone when it is
// missing, invalidated or already past from; a connection still holding
// it is ended: the caller leads the stream), connects and starts streaming
// after from. db is a pool on the same database, for the reader's queries
// (the caller closes it, after the reader). from is the caller's
// checkpoint: the reader confirms it to the server at once, and later only
// what Confirm is given, so the slot never moves past what the caller
// saved.
func Open(ctx context.Context, db *sql.DB, cfg Config, from Position) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if from.IsZero() {
		return nil, errors.New("wal: open: no position to start from (take one with SweepHead)")
	}
	pg, err := cfg.ConnOptions.Config(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("wal: open: %w", err) // validated: unreachable
	}
	conn := pg.Config.Copy()
	conn.RuntimeParams["replication"] = "database"
	r := &Reader{cfg: cfg, conn: conn, db: db, out: make(chan result), done: make(chan struct{}),
		pollDone: make(chan struct{}), from: from, decode: newDecoder(),
		reconnect: changestream.NewReconnector(cfg.Config, "wal")}
	r.confirmed.Store(uint64(from.lsn))
	r.lag.read(from.lsn, time.Time{})
	r.closing, r.close = context.WithCancel(context.Background())
	qctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	err = r.pollPosition(qctx)
	cancel()
	if err != nil {
		r.close()
		return nil, fmt.Errorf("wal: open: read the server's WAL position: %w", err)
	}
	c, err := r.connect(ctx)
	if err != nil {
		r.close()
		return nil, err
	}
	go func() {
		defer close(r.pollDone)
		changestream.PollLag(r.closing, r.cfg.Config, "wal", "the server's WAL position", r.pollPosition)
	}()
	go r.run(c)
	return r, nil
}

// Next blocks until the next transaction that inserted into the outbox
// commits, or a heartbeat is due, and returns it. The reader reconnects by
// itself, with backoff, after a lost connection or a server restart, from
// the last position it returned. Rolled-back transactions (and
// subtransactions) never appear. It returns ctx's error when ctx ends (a
// later call goes on where this one stopped), changestream.ErrClosed after
// Close, changestream.ErrPositionGone when the slot cannot stream from the
// position any more, and other errors for what retrying cannot fix
// (decoding, privileges).
func (r *Reader) Next(ctx context.Context) (changestream.Tx, error) {
	select {
	case res := <-r.out:
		return res.tx, res.err
	case <-ctx.Done():
		return changestream.Tx{}, ctx.Err()
	case <-r.done:
		if r.closing.Err() != nil {
			return changestream.Tx{}, changestream.ErrClosed
		}
		return changestream.Tx{}, r.err
	}
}

// Confirm tells the reader that everything before position is saved by
// the caller (its checkpoint): the server may forget it, and the slot's
// confirmed_flush_lsn moves there within a second. A position before one
// already confirmed changes nothing, nor does text that is not a WAL
// position (confirming less than was saved is always safe).
func (r *Reader) Confirm(position string) {
	p, err := ParsePosition(position)
	if err != nil {
		return
	}
	for {
		old := r.confirmed.Load()
		if uint64(p.lsn) <= old || r.confirmed.CompareAndSwap(old, uint64(p.lsn)) {
			return
		}
	}
}

// Lag is how far the reader is behind the server: bytes of WAL between
// the last position it received and the server's write position (-1 while
// unknown), and seconds: 0 when the server's last word outside a
// transaction said it had nothing more, else the age of the last commit
// read. The server's position is read every Config.LagInterval.
func (r *Reader) Lag() (bytes int64, seconds float64) {
	return r.lag.lag(time.Now())
}

// Close stops the reader: a blocked Next returns changestream.ErrClosed.
// The caller's pool stays open.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.close()
		<-r.done
		<-r.pollDone
	})
	return nil
}

// connect checks the slot, opens a replication connection and starts the
// stream at r.from.
func (r *Reader) connect(ctx context.Context) (*pgconn.PgConn, error) {
	qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if err := r.checkSlot(qctx); err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(qctx, r.conn)
	if err != nil {
		return nil, fmt.Errorf("wal: connect: %w", grantHint(err))
	}
	err = pglogrepl.StartReplication(qctx, conn, r.cfg.Slot, r.from.lsn, pglogrepl.StartReplicationOptions{
		Mode: pglogrepl.LogicalReplication,
		// Protocol 1: a transaction comes whole, once committed, in
		// commit order. Binary: no dependence on the session's DateStyle
		// or TimeZone, and uuids, integers and times in their few bytes.
		PluginArgs: []string{"proto_version '1'", "publication_names '" + r.cfg.Publication + "'", "binary 'true'"},
	})
	if err != nil {
		conn.Close(context.Background())
		return nil, r.startError(err)
	}
	// The caller's checkpoint is the slot's confirmed position from now on.
	if err := r.sendStatus(conn, false); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("wal: start: %w", err)
	}
	return conn, nil
}

// checkSlot fails with changestream.ErrPositionGone unless the slot can stream from
// r.from, and ends a connection that still holds it.
func (r *Reader) checkSlot(ctx context.Context) error {
	s, ok, err := Slot(ctx, r.db, r.cfg)
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: wal: slot %s does not exist (dropped?)", changestream.ErrPositionGone, r.cfg.Slot)
	case s.Lost():
		return fmt.Errorf("%w: wal: slot %s was invalidated: the server removed WAL it needed (max_slot_wal_keep_size)",
			changestream.ErrPositionGone, r.cfg.Slot)
	}
	if c, err := pglogrepl.ParseLSN(s.ConfirmedFlushLSN); err == nil && c > r.from.lsn {
		return fmt.Errorf("%w: wal: slot %s confirmed %s, past %s: the transactions between are no longer in it",
			changestream.ErrPositionGone, r.cfg.Slot, c, r.from.lsn)
	}
	return release(ctx, r.db, r.cfg, s, releaseGrace)
}

// startError classifies a refused START_REPLICATION.
func (r *Reader) startError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := strings.ToLower(pgErr.Message)
		switch {
		case pgErr.Code == "42704" && strings.Contains(msg, "replication slot"):
			return fmt.Errorf("%w: wal: %s", changestream.ErrPositionGone, pgErr.Message)
		case pgErr.Code == "55000" && (strings.Contains(msg, "invalidated") || strings.Contains(msg, "cannot read from")):
			return fmt.Errorf("%w: wal: %s", changestream.ErrPositionGone, pgErr.Message)
		}
	}
	return fmt.Errorf("wal: start streaming slot %s at %s: %w", r.cfg.Slot, r.from.lsn, grantHint(err))
}

// fatal returns the error to hand to Next's caller for err, or nil when a
// new connection may fix it.
func fatal(err error) error {
	if changestream.Permanent(err) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "42501", strings.HasPrefix(pgErr.Code, "28"): // privileges, authentication
			return err
		case pgErr.Code == "42704": // a publication that does not exist
			return fmt.Errorf("%w (create it with herald stream setup)", err)
		}
	}
	return nil
}

// run is the reading goroutine: it streams, reconnects after a lost
// connection from the last position handed out whole, and stops at Close
// or at an error retrying cannot fix.
func (r *Reader) run(conn *pgconn.PgConn) {
	defer close(r.done)
	for {
		progressed, err := r.stream(conn)
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closeCtx)
		cancel()
		if r.closing.Err() != nil {
			return
		}
		if f := fatal(err); f != nil {
			r.err = f
			return
		}
		if progressed {
			r.reconnect.Progressed()
		}
		r.reconnect.Lost(err, r.from.String())
		err = r.reconnect.Reconnect(r.closing, r.from.String(), func(ctx context.Context) error {
			c, err := r.connect(ctx)
			conn = c
			return err
		}, fatal)
		if err != nil {
			if r.closing.Err() == nil {
				r.err = err
			}
			return
		}
	}
}

// streamState is one connection's place in the stream.
type streamState struct {
	conn *pgconn.PgConn
	// inTx says a transaction's messages are being read (BEGIN seen, not
	// its COMMIT); events are its outbox rows not handed out yet, chunked
	// says some were.
	inTx       bool
	events     []store.Event
	chunked    bool
	commitTime time.Time
	// pos is where the stream stands outside a transaction; moved says it
	// is past r.from.
	pos   Position
	moved bool
	// received is the furthest LSN the server sent (the status's write
	// position).
	received pglogrepl.LSN
	// lastStatus is when a status update was last sent, and sentConfirmed
	// the flush position it carried; lastServer when the server last sent
	// anything outside a transaction; lastReturn when a Tx was last handed
	// out; asked when the reader last asked the server for its position.
	lastStatus, lastServer, lastReturn, asked time.Time
	sentConfirmed                             uint64
	progressed                                bool
}

// stream reads one connection until it fails or the reader closes.
// progressed says a transaction or a heartbeat came through.
func (r *Reader) stream(conn *pgconn.PgConn) (progressed bool, err error) {
	now := time.Now()
	st := &streamState{conn: conn, pos: r.from, received: r.from.lsn, lastStatus: now, lastServer: now,
		lastReturn: now, sentConfirmed: r.confirmed.Load()}
	r.columns = map[uint32]*columnIndex{}
	for {
		if r.closing.Err() != nil {
			return st.progressed, changestream.ErrClosed
		}
		if err := r.maybeStatus(st); err != nil {
			return st.progressed, err
		}
		deadline := time.Now().Add(min(r.cfg.HeartbeatPeriod, confirmEvery))
		if due := st.lastStatus.Add(r.cfg.StatusInterval); due.Before(deadline) {
			deadline = due
		}
		rctx, cancel := context.WithDeadline(r.closing, deadline)
		msg, err := conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && r.closing.Err() == nil {
				continue
			}
			return st.progressed, err
		}
		switch msg := msg.(type) {
		case *pgproto3.CopyData:
			if err := r.handle(st, msg.Data); err != nil {
				return st.progressed, err
			}
		case *pgproto3.ErrorResponse:
			return st.progressed, pgconn.ErrorResponseToPgError(msg)
		case *pgproto3.CopyDone:
			return st.progressed, errors.New("the server ended the stream")
		}
	}
}

// maybeStatus sends a status update when one is due: every StatusInterval,
// within a second of a new confirmed position, and, while the stream is
// idle, a request for the server's position every HeartbeatPeriod.
func (r *Reader) maybeStatus(st *streamState) error {
	now := time.Now()
	ask := !st.inTx && now.Sub(st.lastServer) >= r.cfg.HeartbeatPeriod && now.Sub(st.asked) >= r.cfg.HeartbeatPeriod
	if !ask && now.Sub(st.lastStatus) < r.cfg.StatusInterval &&
		(r.confirmed.Load() == st.sentConfirmed || now.Sub(st.lastStatus) < confirmEvery) {
		return nil
	}
	if ask {
		st.asked = now
	}
	return r.status(st, ask)
}

// status sends a standby status update: the position received, and the
// confirmed one as flushed and applied (the slot's confirmed_flush_lsn).
func (r *Reader) status(st *streamState, replyRequested bool) error {
	confirmed := r.confirmed.Load()
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), st.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: max(st.received, pglogrepl.LSN(confirmed)), WALFlushPosition: pglogrepl.LSN(confirmed),
		WALApplyPosition: pglogrepl.LSN(confirmed), ReplyRequested: replyRequested,
	})
	if err != nil {
		return fmt.Errorf("send status update: %w", err)
	}
	st.lastStatus, st.sentConfirmed = time.Now(), confirmed
	return nil
}

// sendStatus sends a status update on a connection just started.
func (r *Reader) sendStatus(conn *pgconn.PgConn, replyRequested bool) error {
	return r.status(&streamState{conn: conn, received: r.from.lsn}, replyRequested)
}

// handle processes one message of the stream.
func (r *Reader) handle(st *streamState, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parse keepalive: %w", err)
		}
		st.received = max(st.received, ka.ServerWALEnd)
		if !st.inTx {
			// Every transaction whose commit lies before the decoder's
			// position was sent before this message.
			st.lastServer = time.Now()
			if ka.ServerWALEnd > st.pos.lsn {
				st.pos, st.moved = Position{ka.ServerWALEnd}, true
			}
			r.lag.caughtUp(ka.ServerWALEnd)
		}
		if ka.ReplyRequested {
			if err := r.status(st, false); err != nil {
				return err
			}
		}
		return r.maybeHeartbeat(st)
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parse XLogData: %w", err)
		}
		st.received = max(st.received, x.WALStart)
		return r.logical(st, x.WALData)
	}
	return nil
}

// logical processes one pgoutput message.
func (r *Reader) logical(st *streamState, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return &changestream.DecodeError{Err: fmt.Errorf("wal: parse a pgoutput message: %w", err)}
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		if m.RelationName != changestream.OutboxTable {
			delete(r.columns, m.RelationID)
			return nil
		}
		ix, err := newColumnIndex(m)
		if err != nil {
			return &changestream.DecodeError{Err: fmt.Errorf("wal: %w", err)}
		}
		r.columns[m.RelationID] = ix
	case *pglogrepl.BeginMessage:
		st.inTx, st.events, st.chunked, st.commitTime = true, nil, false, m.CommitTime.UTC()
		r.lag.reading()
	case *pglogrepl.InsertMessage:
		ix := r.columns[m.RelationID]
		if ix == nil {
			return nil
		}
		e, err := r.decode.event(ix, m.Tuple)
		if err != nil {
			return &changestream.DecodeError{Err: fmt.Errorf("wal: decode %s after %s: %w", changestream.OutboxTable, st.pos, err)}
		}
		st.events = append(st.events, e)
		if len(st.events) >= r.cfg.ChunkEvents {
			// pgoutput sends only committed transactions: a chunk may go
			// before the transaction's end (docs/design.md, "Transactions of
			// any size").
			chunk := st.events
			st.events, st.chunked = nil, true
			if !r.emit(st, changestream.Tx{Events: chunk, CommitTime: st.commitTime}) {
				return changestream.ErrClosed
			}
		}
	case *pglogrepl.CommitMessage:
		end := Position{m.TransactionEndLSN}
		st.inTx, st.lastServer = false, time.Now()
		st.received = max(st.received, m.TransactionEndLSN)
		r.lag.read(m.TransactionEndLSN, m.CommitTime)
		if end.lsn > st.pos.lsn {
			st.pos = end
		}
		if len(st.events) > 0 || st.chunked {
			events := st.events
			st.events, st.chunked = nil, false
			if !r.emit(st, changestream.Tx{Events: events, Position: st.pos.String(), CommitTime: m.CommitTime.UTC()}) {
				return changestream.ErrClosed
			}
			r.from, st.moved, st.lastReturn, st.progressed = st.pos, false, time.Now(), true
			return nil
		}
		st.moved = st.pos.lsn > r.from.lsn
		return r.maybeHeartbeat(st)
	}
	return nil
}

// maybeHeartbeat hands out a heartbeat when the position moved and one is
// due.
func (r *Reader) maybeHeartbeat(st *streamState) error {
	if st.inTx || !st.moved || time.Since(st.lastReturn) < r.cfg.HeartbeatPeriod {
		return nil
	}
	if !r.emit(st, changestream.Tx{Position: st.pos.String()}) {
		return changestream.ErrClosed
	}
	r.from, st.moved, st.lastReturn, st.progressed = st.pos, false, time.Now(), true
	return nil
}

// emit hands tx to Next, answering the server meanwhile; false when the
// reader closed first.
func (r *Reader) emit(st *streamState, tx changestream.Tx) bool {
	for {
		wait := time.NewTimer(confirmEvery)
		select {
		case r.out <- result{tx: tx}:
			wait.Stop()
			return true
		case <-r.closing.Done():
			wait.Stop()
			return false
		case <-wait.C:
			// The connection is idle while Next is not called: keep the
			// server's wal_sender_timeout away, and confirm checkpoints.
			if err := r.maybeStatus(st); err != nil {
				r.cfg.Logger.Warn("wal: status update failed while waiting for the relay", slog.String("error", err.Error()))
			}
		}
	}
}

// pollPosition reads the server's WAL write position once for Lag; it is
// unknown while the read fails.
func (r *Reader) pollPosition(ctx context.Context) error {
	var lsn pglogrepl.LSN
	if err := r.db.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		r.lag.server(0)
		return err
	}
	r.lag.server(lsn)
	return nil
}

// lagState is what Lag reports from.
type lagState struct {
	mu sync.Mutex
	// at is the furthest position read; commit the commit time of the
	// last transaction read; head says the server had nothing more when
	// it last spoke outside a transaction; serverLSN the server's write
	// position (0: unknown).
	at        pglogrepl.LSN
	commit    time.Time
	head      bool
	serverLSN pglogrepl.LSN
}

func (l *lagState) read(at pglogrepl.LSN, commit time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = max(l.at, at)
	if !commit.IsZero() {
		l.commit = commit
	}
	l.head = false
}

func (l *lagState) reading() {
	l.mu.Lock()
	l.head = false
	l.mu.Unlock()
}

func (l *lagState) caughtUp(at pglogrepl.LSN) {
	l.mu.Lock()
	l.at, l.head = max(l.at, at), true
	l.mu.Unlock()
}

func (l *lagState) server(lsn pglogrepl.LSN) {
	l.mu.Lock()
	l.serverLSN = lsn
	l.mu.Unlock()
}

func (l *lagState) lag(now time.Time) (int64, float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bytes := int64(-1)
	if l.serverLSN != 0 {
		bytes = max(0, int64(l.serverLSN)-int64(l.at))
	}
	if l.head || l.commit.IsZero() {
		return bytes, 0
	}
	return bytes, max(0, now.Sub(l.commit).Seconds())
}
