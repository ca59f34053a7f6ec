package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/changestream"
)

// eventBuffer is how many binlog events the connection reads ahead of Next.
// Small, since one event may hold a row of several MB.
const eventBuffer = 128

// Reader streams the committed inserts into the outbox_events table of one
// database from a MariaDB or MySQL server's binlog, as a replica would: a
// changestream.Reader. Next is called from one goroutine; Lag and Close
// from any.
type Reader struct {
	cfg    Config
	dsn    *driver.Config
	flavor string
	// schema is the outbox's database.
	schema string
	// db runs the queries behind Lag: the caller's pool, not closed here.
	db *sql.DB

	closing   context.Context
	close     context.CancelFunc
	closeOnce sync.Once
	pollDone  chan struct{}

	mu     sync.Mutex // guards syncer and closed against Close
	syncer *replication.BinlogSyncer
	closed bool

	// Next's own state.
	stream *replication.BinlogStreamer
	// from is the position Next last returned (or Open's): a new
	// connection starts there.
	from  Position
	cur   cursor
	group group
	// columns locates outbox_events' columns in its current table map.
	columns *columnIndex
	// prepared are the XA transactions prepared but not yet committed or
	// rolled back, oldest first.
	prepared []preparedXA
	// lastReturn is when Next last returned a Tx (heartbeat pacing).
	lastReturn time.Time
	// reconnect paces the connection attempts since the stream last
	// completed a transaction.
	reconnect *changestream.Reconnector

	lag lagState
}

var _ changestream.Reader = (*Reader)(nil)

// Open connects to the server of cfg.DSN and starts reading the binlog
// after from (a Position from Head or from a Tx); db is a pool on the same
// database, for the reader's queries (the caller closes it, after the
// reader). A position the server no longer has, or one of another flavor
// (a MariaDB GTID position on MySQL), is changestream.ErrPositionGone
// (errors.Is), here or later from Next. Open fails with a message naming
// the grant when herald's user lacks REPLICATION SLAVE or BINLOG MONITOR /
// REPLICATION CLIENT.
func Open(ctx context.Context, db *sql.DB, cfg Config, from Position) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if from.IsZero() {
		return nil, errors.New("binlog: open: no position to start from (take one with Head)")
	}
	dsn, err := driver.ParseDSN(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("binlog: open: %w", err) // validated: unreachable
	}
	r := &Reader{cfg: cfg, dsn: dsn, schema: dsn.DBName, db: db, from: from, pollDone: make(chan struct{}),
		lastReturn: time.Now(), reconnect: changestream.NewReconnector(cfg.Config, "binlog")}
	r.closing, r.close = context.WithCancel(context.Background())
	if err := r.open(ctx); err != nil {
		close(r.pollDone) // the poller never started
		r.Close()
		return nil, err
	}
	go func() {
		defer close(r.pollDone)
		changestream.PollLag(r.closing, r.cfg.Config, "binlog", "the server's binlog files", r.pollFiles)
	}()
	return r, nil
}

func (r *Reader) open(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var err error
	if r.flavor, err = flavorOf(qctx, r.db); err != nil {
		return fmt.Errorf("binlog: open: %w", err)
	}
	switch {
	case r.from.kind == kindMariaDB && r.flavor != gomysql.MariaDBFlavor:
		return fmt.Errorf("%w: %s is a MariaDB position but the server is MySQL", changestream.ErrPositionGone, r.from)
	case r.from.kind == kindMySQL && r.flavor != gomysql.MySQLFlavor:
		return fmt.Errorf("%w: %s is a MySQL position but the server is MariaDB", changestream.ErrPositionGone, r.from)
	}
	if err := r.pollFiles(qctx); err != nil {
		return fmt.Errorf("binlog: open: read the binlog's files: %w", withGrantHint(err, r.flavor))
	}
	if err := r.connect(ctx); err != nil {
		if f := fatal(err, r.from); f != nil {
			return f
		}
		return fmt.Errorf("binlog: open: %w", err)
	}
	return nil
}

// Next blocks until the next transaction that inserted into the outbox
// commits, or a heartbeat is due, and returns it. It reconnects by itself,
// with backoff, after a lost connection or a server restart, from the last
// position it returned; binlog rotation is invisible. Rolled-back
// transactions never appear. It returns ctx's error when ctx ends (a later
// call goes on where this one stopped), changestream.ErrClosed after
// Close, changestream.ErrPositionGone when the server cannot stream from
// the position, and other errors for what retrying cannot fix (decoding,
// grants).
func (r *Reader) Next(ctx context.Context) (changestream.Tx, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.closing, cancel)
	defer stop()
	for {
		if r.stream == nil {
			if err := r.reconnect.Reconnect(ctx, r.from.String(), r.connect, func(err error) error { return fatal(err, r.from) }); err != nil {
				return changestream.Tx{}, r.stopped(err)
			}
			continue
		}
		ev, err := r.stream.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return changestream.Tx{}, r.stopped(ctx.Err())
			}
			r.dropStream()
			if err := fatal(err, r.from); err != nil {
				return changestream.Tx{}, err
			}
			r.reconnect.Lost(err, r.from.String())
			continue
		}
		t, ok, err := r.handle(ev)
		if err != nil {
			// The next call starts over from the last position returned and
			// meets the same error: nothing after it is skipped.
			r.dropStream()
			return changestream.Tx{}, err
		}
		if !ok {
			continue
		}
		tx := changestream.Tx{Events: t.events, CommitTime: t.commit}
		if t.at.IsZero() {
			return tx, nil // a chunk: the position stays at the transaction's start
		}
		tx.Position = t.at.String()
		r.from, r.cur.moved, r.lastReturn = t.at, false, time.Now()
		return tx, nil
	}
}

// stopped returns changestream.ErrClosed after Close, else err.
func (r *Reader) stopped(err error) error {
	if r.closing.Err() != nil {
		return changestream.ErrClosed
	}
	return err
}

// connect starts a stream from r.from and waits until the server accepted
// the position (its format description arrives first).
func (r *Reader) connect(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return changestream.ErrClosed
	}
	s := replication.NewBinlogSyncer(r.syncerConfig())
	r.syncer = s
	r.mu.Unlock()

	var stream *replication.BinlogStreamer
	var err error
	switch r.from.kind {
	case kindMariaDB:
		var set gomysql.GTIDSet
		if set, err = gomysql.ParseMariadbGTIDSet(r.from.gtid); err == nil {
			stream, err = s.StartSyncGTID(set)
		}
	case kindMySQL:
		var set gomysql.GTIDSet
		if set, err = gomysql.ParseMysqlGTIDSet(r.from.gtid); err == nil {
			stream, err = s.StartSyncGTID(set)
		}
	default:
		stream, err = s.StartSync(gomysql.Position{Name: r.from.file, Pos: r.from.offset})
	}
	if err != nil {
		r.dropSyncer(s)
		return err
	}
	// From r.from, which lies before every XA transaction still prepared: the
	// stream reads their first halves again.
	r.stream, r.cur, r.group, r.columns, r.prepared = stream, cursorAt(r.from), group{}, nil, nil
	r.lag.rotate(r.cur.file, r.cur.offset)

	wctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	for {
		ev, err := stream.GetEvent(wctx)
		if err == nil {
			_, _, err = r.handle(ev) // a rotation, the format description: never a Tx
		}
		if err != nil {
			r.dropStream()
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("the server sent no binlog within %v of the request", r.cfg.Timeout)
			}
			return err
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			return nil
		}
	}
}

func (r *Reader) syncerConfig() replication.BinlogSyncerConfig {
	c := replication.BinlogSyncerConfig{
		ServerID:        r.cfg.ServerID,
		Flavor:          r.flavor,
		User:            r.dsn.User,
		Password:        r.dsn.Passwd,
		TLSConfig:       r.dsn.TLS,
		HeartbeatPeriod: r.cfg.HeartbeatPeriod,
		ReadTimeout:     r.cfg.ReadTimeout,
		// Reconnection is the Reader's: from the last position returned,
		// at a transaction's boundary, with backoff.
		DisableRetrySync: true,
		// The Reader keeps its own position; go-mysql's copy per event
		// would only cost.
		DiscardGTIDSet:  true,
		EventCacheCount: eventBuffer,
		VerifyChecksum:  true,
		// MySQL's binary JSON rendered as MySQL renders it to a SELECT.
		RenderJSONAsMySQLText: true,
		// MariaDB 11.4+ leaves some events' positions at 0 unless told.
		FillZeroLogPos:      r.flavor == gomysql.MariaDBFlavor,
		RowsEventDecodeFunc: r.decodeRows,
		Logger:              slog.New(debugHandler{r.cfg.Logger.Handler()}),
	}
	if r.dsn.Net == "unix" {
		c.Host = r.dsn.Addr // go-mysql dials a unix socket for an address with a slash
	} else {
		host, port, err := net.SplitHostPort(r.dsn.Addr)
		if err != nil {
			host, port = r.dsn.Addr, "3306"
		}
		p, _ := strconv.ParseUint(port, 10, 16)
		c.Host, c.Port = host, uint16(p)
	}
	return c
}

// decodeRows decodes only the row events the reader keeps (inserts into the
// outbox): other tables' rows, and the relay's updates of outbox rows, are
// never decoded. It runs on go-mysql's reading goroutine.
func (r *Reader) decodeRows(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	if e.Type() != replication.EnumRowsEventTypeInsert || !r.isOutbox(e.Table) {
		return nil
	}
	if err := e.DecodeData(pos, data); err != nil {
		return &changestream.DecodeError{Err: fmt.Errorf("binlog: decode a row event of %s.%s: %w", r.schema, changestream.OutboxTable, err)}
	}
	return nil
}

// dropStream ends the current connection.
func (r *Reader) dropStream() {
	r.mu.Lock()
	s := r.syncer
	r.mu.Unlock()
	r.dropSyncer(s)
}

func (r *Reader) dropSyncer(s *replication.BinlogSyncer) {
	r.stream = nil
	r.mu.Lock()
	if r.syncer == s {
		r.syncer = nil
	}
	r.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// fatal returns the error to hand to Next's caller for err, or nil when a
// new connection may fix it.
func fatal(err error, from Position) error {
	if changestream.Permanent(err) {
		return err
	}
	var ge *gomysql.MyError
	if !errors.As(err, &ge) {
		return nil // network trouble, a restart, a timeout
	}
	switch ge.Code {
	case errFatalReadingBinlog:
		msg := strings.ToLower(ge.Message)
		for _, gone := range []string{"purged", "could not find", "not in the master's binlog", "impossible position",
			"position > file size", "diverged"} {
			if strings.Contains(msg, gone) {
				return fmt.Errorf("%w: binlog: %s: %s", changestream.ErrPositionGone, from, ge.Message)
			}
		}
		return fmt.Errorf("binlog: the server cannot stream from %s: %w", from, ge)
	case errSpecificAccessDenied, errAccessDenied, errDBAccessDenied, errTableAccessDenied:
		// MariaDB answers a stream request without the grant with "access
		// denied for user", as if the password were wrong.
		return fmt.Errorf("binlog: the server refused the binlog stream: %w (herald's user needs REPLICATION SLAVE: "+
			"GRANT REPLICATION SLAVE ON *.* TO <herald's user>; and the DSN's password must be right)", ge)
	}
	return nil
}

// Lag is how far the reader is behind the server's binlog head: bytes of
// binlog between its place and the head (-1 when unknown: before the first
// read of the server's files, or while those reads fail), and seconds: 0
// at the head, else the age of the last transaction it read (MariaDB gives
// whole seconds) or of the last moment it was at the head, whichever is
// younger. The head is read every Config.LagInterval.
func (r *Reader) Lag() (bytes int64, seconds float64) {
	return r.lag.lag(time.Now())
}

// pollFiles reads the server's binlog files and clock once for Lag; they
// are unknown while the read fails.
func (r *Reader) pollFiles(ctx context.Context) error {
	files, skew, err := pollLag(ctx, r.db)
	r.lag.polled(files, skew)
	return err
}

// Close stops the reader: a blocked Next returns changestream.ErrClosed.
// The caller's pool stays open.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		r.close()
		<-r.pollDone
		r.mu.Lock()
		r.closed = true
		s := r.syncer
		r.syncer = nil
		r.mu.Unlock()
		if s != nil {
			s.Close()
		}
	})
	return nil
}

// debugHandler passes go-mysql's logs on at debug level: the Reader logs
// what matters (lost streams, reconnections) itself, once.
type debugHandler struct{ slog.Handler }

func (h debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, rec)
}

func (h debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{h.Handler.WithAttrs(attrs)}
}

func (h debugHandler) WithGroup(name string) slog.Handler {
	return debugHandler{h.Handler.WithGroup(name)}
}
