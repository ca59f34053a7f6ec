package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
)

//go:embed sql/*.sql postgres/*.sql
var heraldSQL embed.FS

// Herald is herald's own schema: the outbox and the inbox tables.
var Herald = Set{Name: "herald", Table: "herald_schema_migrations",
	FS: mustSub(heraldSQL, "sql"), PostgresFS: mustSub(heraldSQL, "postgres")}

// ErrSchemaTooNew is returned when the database was migrated by a newer
// binary than this one.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// Set is a named sequence of goose SQL migrations with its own version table.
type Set struct {
	// Name appears in messages and in the lock name.
	Name string
	// Table records the applied versions.
	Table string
	// FS holds NNNNN_name.sql files at its root, for MySQL and MariaDB.
	FS fs.FS
	// PostgresFS holds the same migrations for PostgreSQL; nil when the set
	// has none (applying it to PostgreSQL then fails).
	PostgresFS fs.FS
}

// Server kinds the runner tells apart.
const (
	serverMySQL    = "mysql"
	serverPostgres = "postgres"
)

// serverKind asks db which database it is: PostgreSQL's version() starts
// with "PostgreSQL", MySQL's and MariaDB's with a number. Asking the server
// instead of the driver serves any driver a caller opened db with.
func serverKind(ctx context.Context, db *sql.DB) (string, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		return "", fmt.Errorf("read server version: %w", err)
	}
	if strings.HasPrefix(version, "PostgreSQL") {
		return serverPostgres, nil
	}
	return serverMySQL, nil
}

// tableExists says whether db's current database (MySQL) or search path
// (PostgreSQL) has table.
func tableExists(ctx context.Context, db *sql.DB, kind, table string) (bool, error) {
	var exists bool
	var err error
	if kind == serverPostgres {
		err = db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists)
	} else {
		err = db.QueryRowContext(ctx, `SELECT COUNT(*) > 0 FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = ?`, table).Scan(&exists)
	}
	return exists, err
}

// Status is where a database stands relative to a Set.
type Status struct {
	// Current is the highest version applied to the database (0: none).
	Current int64
	// Latest is the highest version this binary knows.
	Latest int64
	// Migrations lists every known migration with whether it is applied.
	Migrations []MigrationStatus
}

// MigrationStatus is one migration of a Status.
type MigrationStatus struct {
	Version   int64
	Name      string
	AppliedAt time.Time // zero when pending
}

// Up applies the pending migrations of s and returns the versions it applied
// (none when the database was current).
func (s Set) Up(ctx context.Context, db *sql.DB) ([]int64, error) {
	var applied []int64
	kind, err := serverKind(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", s.Name, err)
	}
	err = s.withLock(ctx, db, kind, func(p *goose.Provider) error {
		// Before anything is written (goose would create its version
		// table first): a migration the server would refuse halfway.
		if err := s.checkPrivileges(ctx, db, kind, p); err != nil {
			return err
		}
		if err := s.checkNotNewer(ctx, p); err != nil {
			return err
		}
		results, err := p.Up(ctx)
		for _, r := range results {
			applied = append(applied, r.Source.Version)
		}
		if err != nil {
			return fmt.Errorf("apply %s migrations: %w", s.Name, err)
		}
		return nil
	})
	return applied, err
}

// createTable and dropTable find the tables a migration creates and drops.
var (
	createTable = regexp.MustCompile("(?i)\\bCREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?[`\"]?([A-Za-z_][A-Za-z0-9_$]*)")
	dropTable   = regexp.MustCompile("(?i)\\bDROP\\s+TABLE\\s+(?:IF\\s+EXISTS\\s+)?[`\"]?([A-Za-z_][A-Za-z0-9_$]*)")
)

// Tables lists, sorted, the tables s's migrations leave in a database,
// on either server, and s.Table, where the applied versions are kept.
func (s Set) Tables() []string {
	tables := map[string]bool{s.Table: true}
	for _, fsys := range []fs.FS{s.FS, s.PostgresFS} {
		if fsys == nil {
			continue
		}
		files, _ := fs.Glob(fsys, "*.sql") // goose's order: the versions' zero-padded names sort
		for _, name := range files {
			text, err := fs.ReadFile(fsys, name)
			if err != nil {
				continue
			}
			up := upSection(text)
			for _, m := range createTable.FindAllSubmatch(up, -1) {
				tables[string(m[1])] = true
			}
			for _, m := range dropTable.FindAllSubmatch(up, -1) {
				delete(tables, string(m[1]))
			}
		}
	}
	return slices.Sorted(maps.Keys(tables))
}

// Status reports which migrations of s are applied to db.
func (s Set) Status(ctx context.Context, db *sql.DB) (Status, error) {
	kind, err := serverKind(ctx, db)
	if err != nil {
		return Status{}, fmt.Errorf("%s migration status: %w", s.Name, err)
	}
	p, err := s.provider(db, kind)
	if err != nil {
		return Status{}, err
	}
	var st Status
	// Reading the status writes nothing: goose would create its version
	// table on a database nobody migrated.
	exists, err := tableExists(ctx, db, kind, s.Table)
	if err != nil {
		return Status{}, fmt.Errorf("read %s schema version: %w", s.Name, err)
	}
	if !exists {
		for _, src := range p.ListSources() {
			st.Migrations = append(st.Migrations, MigrationStatus{Version: src.Version, Name: src.Path})
			st.Latest = max(st.Latest, src.Version)
		}
		return st, nil
	}
	if st.Current, err = p.GetDBVersion(ctx); err != nil {
		return Status{}, fmt.Errorf("read %s schema version: %w", s.Name, err)
	}
	list, err := p.Status(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read %s migration status: %w", s.Name, err)
	}
	for _, m := range list {
		st.Migrations = append(st.Migrations, MigrationStatus{
			Version: m.Source.Version, Name: m.Source.Path, AppliedAt: m.AppliedAt,
		})
		st.Latest = max(st.Latest, m.Source.Version)
	}
	return st, nil
}

// Check returns nil when db's schema is exactly what this binary expects,
// ErrSchemaTooNew when it is newer, and an error asking to migrate when
// migrations are pending.
func (s Set) Check(ctx context.Context, db *sql.DB) error {
	st, err := s.Status(ctx, db)
	if err != nil {
		return err
	}
	switch {
	case st.Current > st.Latest:
		return s.tooNew(st.Current, st.Latest)
	case st.Current < st.Latest:
		return fmt.Errorf("%s schema is at version %d, this binary needs %d: run `herald migrate up`", s.Name, st.Current, st.Latest)
	}
	return nil
}

func (s Set) checkNotNewer(ctx context.Context, p *goose.Provider) error {
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read %s schema version: %w", s.Name, err)
	}
	var latest int64
	for _, src := range p.ListSources() {
		latest = max(latest, src.Version)
	}
	if current > latest {
		return s.tooNew(current, latest)
	}
	return nil
}

func (s Set) tooNew(current, latest int64) error {
	return fmt.Errorf("%w: %s schema is at version %d but this binary knows only up to %d; "+
		"run a herald at least as new as the one that migrated it (no downgrade is attempted)",
		ErrSchemaTooNew, s.Name, current, latest)
}

func (s Set) provider(db *sql.DB, kind string) (*goose.Provider, error) {
	dialect, fsys := goose.DialectMySQL, s.FS
	if kind == serverPostgres {
		dialect, fsys = goose.DialectPostgres, s.PostgresFS
		if fsys == nil {
			return nil, fmt.Errorf("%s migrations: none for PostgreSQL", s.Name)
		}
	}
	p, err := goose.NewProvider(dialect, db, fsys,
		goose.WithTableName(s.Table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load %s migrations: %w", s.Name, err)
	}
	return p, nil
}

// lockWait is how long a migrator waits for another one to finish.
const lockWait = 60 * time.Second

// withLock runs fn while holding a lock on the server (a MySQL named lock, a
// PostgreSQL session advisory lock), so that several processes migrating at
// start-up apply each migration once.
func (s Set) withLock(ctx context.Context, db *sql.DB, kind string, fn func(*goose.Provider) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", s.Name, err)
	}
	defer conn.Close()
	lockName := "herald_migrate_" + s.Table
	release, err := takeLock(ctx, conn, kind, lockName)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", s.Name, err)
	}
	defer release()

	p, err := s.provider(db, kind)
	if err != nil {
		return err
	}
	return fn(p)
}

// takeLock takes the migration lock called name on conn, waiting up to
// lockWait, and returns its release.
func takeLock(ctx context.Context, conn *sql.Conn, kind, name string) (release func(), err error) {
	if kind == serverPostgres {
		// An advisory lock is keyed by a number: the name's 64-bit FNV hash.
		// It is the session's, so it ends with conn even if the release is
		// never sent.
		h := fnv.New64a()
		h.Write([]byte(name))
		key := int64(h.Sum64())
		waitCtx, cancel := context.WithTimeout(ctx, lockWait)
		defer cancel()
		if _, err := conn.ExecContext(waitCtx, "SELECT pg_advisory_lock($1)", key); err != nil {
			if waitCtx.Err() != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("another process held the migration lock for %v", lockWait)
			}
			return nil, fmt.Errorf("take lock: %w", err)
		}
		return func() {
			conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
		}, nil
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, int(lockWait.Seconds())).Scan(&got); err != nil {
		return nil, fmt.Errorf("take lock: %w", err)
	}
	if got.Int64 != 1 {
		return nil, fmt.Errorf("another process held the migration lock for %v", lockWait)
	}
	return func() {
		conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", name)
	}, nil
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
