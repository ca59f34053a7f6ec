package wal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/postgres"
)

// minServerVersion is the oldest PostgreSQL the reader streams from:
// pgoutput's binary option came with 14.
const minServerVersion = 140000

// Check says whether the server and herald's role can stream: wal_level
// logical, PostgreSQL 14+, slots allowed, the REPLICATION attribute (or
// superuser). Every problem is named with its fix, at once.
func Check(ctx context.Context, db *sql.DB) error {
	var (
		level              string
		version, slots     int
		replication, super bool
	)
	err := db.QueryRowContext(ctx, `SELECT current_setting('wal_level'), current_setting('server_version_num')::int,
		current_setting('max_replication_slots')::int, rolreplication, rolsuper
		FROM pg_roles WHERE rolname = current_user`).Scan(&level, &version, &slots, &replication, &super)
	if err != nil {
		return fmt.Errorf("wal: read the server's replication settings: %w", err)
	}
	var problems []string
	if version < minServerVersion {
		problems = append(problems, fmt.Sprintf("PostgreSQL %d.%d: the WAL source needs 14 or later", version/10000, version%10000/100))
	}
	if level != "logical" {
		problems = append(problems, fmt.Sprintf("wal_level is %s: set wal_level = logical in postgresql.conf and restart the server", level))
	}
	if slots == 0 {
		problems = append(problems, "max_replication_slots is 0: set it to at least 1 (one slot per outbox database) and restart the server")
	}
	if !replication && !super {
		problems = append(problems, "herald's role lacks the REPLICATION attribute: ALTER ROLE <herald's role> REPLICATION;")
	}
	if len(problems) > 0 {
		return fmt.Errorf("wal: the server cannot stream the outbox: %s (docs/postgres-stream.md)", strings.Join(problems, "; "))
	}
	return nil
}

// Slot reads the state of cfg's slot; false when it does not exist.
func Slot(ctx context.Context, db *sql.DB, cfg Config) (store.ReplicationSlot, bool, error) {
	cfg = cfg.withDefaults()
	slots, err := postgres.Dialect{}.ReadSlots(ctx, db)
	if err != nil {
		return store.ReplicationSlot{}, false, fmt.Errorf("wal: read slot %s: %w", cfg.Slot, err)
	}
	for _, s := range slots {
		if s.Name == cfg.Slot {
			return s, true, nil
		}
	}
	var elsewhere string
	err = db.QueryRowContext(ctx, `SELECT COALESCE(database, '(physical)') FROM pg_replication_slots WHERE slot_name = $1`,
		cfg.Slot).Scan(&elsewhere)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ReplicationSlot{}, false, nil
	case err != nil:
		return store.ReplicationSlot{}, false, fmt.Errorf("wal: read slot %s: %w", cfg.Slot, err)
	}
	return store.ReplicationSlot{}, false, fmt.Errorf("wal: slot %s belongs to database %s, not this one: name another slot (--slot)",
		cfg.Slot, elsewhere)
}

// Setup creates what the stream needs and is missing: the publication of
// outbox_events' inserts (the role must own the table, as the one that
// ran herald's migrations does), then the slot. It returns the slot and
// whether it created it. Creating a slot waits for the transactions open
// on the server to end (PostgreSQL needs a point no running transaction
// straddles), however long they run.
func Setup(ctx context.Context, db *sql.DB, cfg Config) (store.ReplicationSlot, bool, error) {
	if err := cfg.Validate(); err != nil {
		return store.ReplicationSlot{}, false, err
	}
	cfg = cfg.withDefaults()
	if err := ensurePublication(ctx, db, cfg); err != nil {
		return store.ReplicationSlot{}, false, err
	}
	slot, ok, err := Slot(ctx, db, cfg)
	if err != nil || ok {
		return slot, false, err
	}
	if err := createSlot(ctx, db, cfg); err != nil {
		return store.ReplicationSlot{}, false, err
	}
	slot, _, err = Slot(ctx, db, cfg)
	return slot, true, err
}

// ensurePublication creates the publication unless it exists, and checks
// that it publishes outbox_events' inserts.
func ensurePublication(ctx context.Context, db *sql.DB, cfg Config) error {
	var inserts, hasTable bool
	err := db.QueryRowContext(ctx, `SELECT p.pubinsert, EXISTS (SELECT FROM pg_publication_tables t
		WHERE t.pubname = p.pubname AND t.tablename = 'outbox_events' AND t.schemaname = current_schema())
		FROM pg_publication p WHERE p.pubname = $1`, cfg.Publication).Scan(&inserts, &hasTable)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Only the inserts: the relay's own updates and cleanup's deletes
		// never reach the stream.
		_, err = db.ExecContext(ctx, `CREATE PUBLICATION `+quoteIdent(cfg.Publication)+
			` FOR TABLE outbox_events WITH (publish = 'insert')`)
		if err != nil {
			return fmt.Errorf("wal: create publication %s: %w (herald's role must own outbox_events: run herald stream setup as the role that ran herald migrate)",
				cfg.Publication, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("wal: read publication %s: %w", cfg.Publication, err)
	case !hasTable || !inserts:
		return fmt.Errorf("wal: publication %s exists but does not publish the inserts into outbox_events: drop it (herald stream drop) or name another",
			cfg.Publication)
	}
	return nil
}

// createSlot creates cfg's slot with pgoutput.
func createSlot(ctx context.Context, db *sql.DB, cfg Config) error {
	cfg.Logger.Info("wal: creating the replication slot; it waits for the transactions open on the server to end",
		"slot", cfg.Slot)
	var lsn string
	err := db.QueryRowContext(ctx, `SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')`, cfg.Slot).Scan(&lsn)
	if err != nil {
		return fmt.Errorf("wal: create slot %s: %w", cfg.Slot, grantHint(err))
	}
	cfg.Logger.Info("wal: replication slot created", "slot", cfg.Slot, "lsn", lsn)
	return nil
}

// Drop removes cfg's slot, ending the connection that streams from it
// first (a relay streaming from it goes back to a sweep and creates it
// again), and, with publication, the publication. It says what it
// dropped.
func Drop(ctx context.Context, db *sql.DB, cfg Config, publication bool) (slot, pub bool, err error) {
	cfg = cfg.withDefaults()
	s, ok, err := Slot(ctx, db, cfg)
	if err != nil {
		return false, false, err
	}
	if ok {
		if err := dropSlot(ctx, db, cfg, s); err != nil {
			return false, false, err
		}
		slot = true
	}
	if publication {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_publication WHERE pubname = $1`, cfg.Publication).Scan(&n); err != nil {
			return slot, false, fmt.Errorf("wal: read publication %s: %w", cfg.Publication, err)
		}
		if n > 0 {
			if _, err := db.ExecContext(ctx, `DROP PUBLICATION `+quoteIdent(cfg.Publication)); err != nil {
				return slot, false, fmt.Errorf("wal: drop publication %s: %w", cfg.Publication, err)
			}
			pub = true
		}
	}
	return slot, pub, nil
}

// dropSlot drops slot s, ending the connection that streams from it; a
// reader that reconnects in between (a relay's does within a second) is
// ended again.
func dropSlot(ctx context.Context, db *sql.DB, cfg Config, s store.ReplicationSlot) error {
	deadline := time.Now().Add(cfg.Timeout)
	for grace := releaseGrace; ; grace = 0 {
		if err := release(ctx, db, cfg, s, grace); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `SELECT pg_drop_replication_slot($1)`, cfg.Slot)
		var pgErr interface{ SQLState() string }
		if err == nil || !errors.As(err, &pgErr) || pgErr.SQLState() != "55006" || time.Now().After(deadline) { // object_in_use
			if err != nil {
				return fmt.Errorf("wal: drop slot %s: %w", cfg.Slot, grantHint(err))
			}
			return nil
		}
		var ok bool
		if s, ok, err = Slot(ctx, db, cfg); err != nil || !ok {
			return err
		}
	}
}

// release ends the server process streaming from slot s, if any, and
// waits until the slot is free: a relay that lost the stream lease, or a
// connection of this process the server has not noticed closing, may
// still hold it (the stream lease, not the slot, says who streams).
func release(ctx context.Context, db *sql.DB, cfg Config, s store.ReplicationSlot, grace time.Duration) error {
	if !s.Active {
		return nil
	}
	// A connection that was closed (this process's last, a relay that
	// stopped or died) frees the slot within moments by itself.
	if gone, err := waitGone(ctx, db, cfg, s.ActivePID, grace); err != nil || gone {
		return err
	}
	cfg.Logger.Warn("wal: the slot is in use by another connection; ending it", "slot", cfg.Slot, "pid", s.ActivePID)
	if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, s.ActivePID); err != nil {
		return fmt.Errorf("wal: end the connection (pid %d) that holds slot %s: %w", s.ActivePID, cfg.Slot, err)
	}
	gone, err := waitGone(ctx, db, cfg, s.ActivePID, cfg.Timeout)
	if err == nil && !gone {
		err = fmt.Errorf("wal: slot %s is still held by pid %d %v after it was told to end", cfg.Slot, s.ActivePID, cfg.Timeout)
	}
	return err
}

// releaseGrace is how long release waits for a slot's connection to end
// by itself before ending it.
const releaseGrace = time.Second

// waitGone polls until server process pid no longer holds cfg's slot (the
// slot is free, gone, or another connection took it: the caller's next
// attempt meets that one), for up to d.
func waitGone(ctx context.Context, db *sql.DB, cfg Config, pid int, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		var holder int
		err := db.QueryRowContext(ctx, `SELECT COALESCE(active_pid, 0) FROM pg_replication_slots WHERE slot_name = $1`, cfg.Slot).Scan(&holder)
		if errors.Is(err, sql.ErrNoRows) || err == nil && holder != pid {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("wal: read slot %s: %w", cfg.Slot, err)
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Head returns the server's WAL insert position: every transaction that
// ended before Head was called has its commit record before it, so a
// stream's position at or past it has passed them (the watermark's head,
// docs/design.md, section 9.3). A commit record reaches the WAL an
// instant before the transaction is visible to other sessions, so a
// sweep must start from SweepHead instead.
func Head(ctx context.Context, db *sql.DB) (Position, error) {
	var lsn pglogrepl.LSN
	if err := db.QueryRowContext(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return Position{}, fmt.Errorf("wal head: %w", err)
	}
	return Position{lsn}, nil
}

// sweepLockTimeout bounds each attempt at SweepHead's lock: writers of the
// outbox queue behind a waiting lock, so it is given up soon and tried
// again.
const sweepLockTimeout = 200 * time.Millisecond

// SweepHead makes the slot ready to stream (the publication and the slot
// created where missing, an invalidated slot created anew) and returns a
// position P such that every transaction that inserted into outbox_events
// with its commit before P is visible to reads that start after SweepHead
// returns, and every one after P is in a stream opened at P: a sweep of
// the outbox after SweepHead and a stream from P miss nothing between
// them (docs/design.md, section 9.6).
//
// Why a lock: a commit record is written before the transaction leaves
// the server's list of running transactions (with synchronous replication,
// long before), so the WAL position alone could lie after a commit a read
// does not see yet. P is read while holding outbox_events in SHARE mode,
// which waits for every transaction that inserted into it to end (their
// locks go after they are visible) and keeps new ones out for the moment
// it takes. Each attempt gives up after 200ms so the writers queued
// behind it go on, and is tried again.
func SweepHead(ctx context.Context, db *sql.DB, cfg Config) (Position, error) {
	if err := cfg.Validate(); err != nil {
		return Position{}, err
	}
	cfg = cfg.withDefaults()
	if err := ensurePublication(ctx, db, cfg); err != nil {
		return Position{}, err
	}
	s, ok, err := Slot(ctx, db, cfg)
	if err != nil {
		return Position{}, err
	}
	if ok && s.Lost() {
		cfg.Logger.Warn("wal: the replication slot was invalidated (its WAL was removed, max_slot_wal_keep_size); creating it anew",
			"slot", cfg.Slot)
		if _, _, err := Drop(ctx, db, cfg, false); err != nil {
			return Position{}, err
		}
		ok = false
	}
	if !ok {
		// Before P: the slot streams every commit after its creation.
		if err := createSlot(ctx, db, cfg); err != nil {
			return Position{}, err
		}
	}
	// The slot is not advanced here: its confirmed position moves only to
	// a checkpoint, and the sweep's is written once the sweep is done.
	return lockedHead(ctx, db, cfg)
}

// lockedHead reads the WAL insert position under SweepHead's lock.
func lockedHead(ctx context.Context, db *sql.DB, cfg Config) (Position, error) {
	for attempt := 1; ; attempt++ {
		p, err := tryLockedHead(ctx, db)
		if err == nil {
			return p, nil
		}
		var pgErr interface{ SQLState() string }
		if !errors.As(err, &pgErr) || pgErr.SQLState() != "55P03" { // lock_not_available
			return Position{}, fmt.Errorf("wal: sweep head: %w", err)
		}
		if attempt%25 == 0 {
			cfg.Logger.Warn("wal: the sweep waits for transactions that inserted into outbox_events to end (a long or prepared transaction?)",
				"attempts", attempt)
		}
		select {
		case <-ctx.Done():
			return Position{}, ctx.Err()
		case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
		}
	}
}

func tryLockedHead(ctx context.Context, db *sql.DB) (Position, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return Position{}, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, sweepLockTimeout.Milliseconds())); err != nil {
		return Position{}, err
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE outbox_events IN SHARE MODE`); err != nil {
		return Position{}, err
	}
	var lsn pglogrepl.LSN
	if err := tx.QueryRowContext(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return Position{}, err
	}
	return Position{lsn}, tx.Commit()
}

// grantHint adds the fix to a refusal for want of the REPLICATION
// attribute.
func grantHint(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "42501" { // insufficient_privilege
		return fmt.Errorf("%w (herald's role needs the REPLICATION attribute: ALTER ROLE <herald's role> REPLICATION;)", err)
	}
	return err
}

// quoteIdent quotes a name as an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
