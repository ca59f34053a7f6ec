package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// LogFile is one of the server's binary logs and its size in bytes.
type LogFile struct {
	Name string
	Size int64
}

// lagState is what Lag computes from: the server's binlog files as last
// read (their sizes; the last file's size is the head) and where the
// reader's stream stands. The reader's goroutine and the poller write it,
// Lag reads it.
type lagState struct {
	mu sync.Mutex
	// files are the server's binary logs at the last poll, oldest first;
	// nil before the first poll or after a failed one.
	files []LogFile
	// skew is the server's clock minus ours, measured at the last poll.
	skew time.Duration
	// file and offset are the reader's place in the stream.
	file   string
	offset uint32
	// commit is the commit time of the last transaction read (server
	// clock).
	commit time.Time
	// atHead is when the reader was last known at the binlog's head (server
	// clock): a heartbeat came, or a poll found nothing left to read.
	atHead time.Time
}

// rotate moves the reader's place to a new file (or, at the start of a
// stream, to where the server starts sending).
func (l *lagState) rotate(file string, offset uint32) {
	l.mu.Lock()
	l.file, l.offset = file, offset
	l.mu.Unlock()
}

// advance moves the reader's place forward inside its file.
func (l *lagState) advance(file string, offset uint32) {
	l.mu.Lock()
	if file == l.file && offset > l.offset {
		l.offset = offset
	}
	l.mu.Unlock()
}

// read records that the reader finished a transaction.
func (l *lagState) read(file string, offset uint32, commit time.Time) {
	l.mu.Lock()
	l.file, l.offset, l.commit = file, offset, commit
	l.mu.Unlock()
}

// caughtUp records a heartbeat: the server had nothing more to send.
func (l *lagState) caughtUp(file string, offset uint32) {
	l.mu.Lock()
	l.atHead = time.Now().Add(l.skew)
	if file == l.file && offset > l.offset {
		l.offset = offset
	}
	l.mu.Unlock()
}

// polled records a poll of the server's binlog files.
func (l *lagState) polled(files []LogFile, skew time.Duration) {
	l.mu.Lock()
	l.files, l.skew = files, skew
	if files != nil && l.bytesLocked() == 0 {
		l.atHead = time.Now().Add(skew)
	}
	l.mu.Unlock()
}

// lag returns the bytes between the reader's place and the head (-1 when
// unknown) and the seconds the reader is behind: 0 at the head, else the
// age of the last transaction read or of the last moment it was at the
// head, whichever is younger.
func (l *lagState) lag(now time.Time) (int64, float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bytes := l.bytesLocked()
	if bytes == 0 {
		return 0, 0
	}
	since := l.commit
	if l.atHead.After(since) {
		since = l.atHead
	}
	if since.IsZero() {
		return bytes, 0
	}
	return bytes, max(0, now.Add(l.skew).Sub(since).Seconds())
}

func (l *lagState) bytesLocked() int64 {
	if l.files == nil || l.file == "" {
		return -1
	}
	for i, f := range l.files {
		if f.Name != l.file {
			continue
		}
		n := f.Size - int64(l.offset)
		for _, later := range l.files[i+1:] {
			n += later.Size
		}
		return max(0, n) // the reader may be past the last poll's head
	}
	if last := l.files[len(l.files)-1]; binlogAfter(l.file, last.Name) {
		return 0 // a file newer than the last poll: the reader is past it
	}
	return -1
}

// binlogAfter reports whether binlog file a comes after b: same base name,
// larger sequence number (the extension is a zero-padded counter that may
// outgrow its padding).
func binlogAfter(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// pollLag reads the server's binlog files and clock once.
func pollLag(ctx context.Context, db *sql.DB) ([]LogFile, time.Duration, error) {
	before := time.Now()
	var serverNow time.Time
	if err := db.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&serverNow); err != nil {
		return nil, 0, fmt.Errorf("read the server's clock: %w", err)
	}
	skew := serverNow.Sub(before.Add(time.Since(before) / 2))
	files, err := ListLogs(ctx, db)
	if err != nil {
		return nil, 0, err
	}
	return files, skew, nil
}

// ListLogs returns the server's binary logs, oldest first (SHOW BINARY
// LOGS); an error when binary logging is off.
func ListLogs(ctx context.Context, db *sql.DB) ([]LogFile, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if len(cols) < 2 {
		return nil, fmt.Errorf("SHOW BINARY LOGS returned %d columns", len(cols))
	}
	var files []LogFile
	for rows.Next() {
		raw := make([]sql.RawBytes, len(cols))
		dest := make([]any, len(cols))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(string(raw[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS: size %q: %w", raw[1], err)
		}
		files = append(files, LogFile{Name: string(raw[0]), Size: size})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("SHOW BINARY LOGS returned nothing: binary logging is off (log_bin)")
	}
	return files, nil
}
