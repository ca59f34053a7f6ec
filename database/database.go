package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/postgres"
)

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool { return postgres.IsURL(dsn) }

// OnPostgres reports whether d is PostgreSQL's dialect.
func OnPostgres(d store.Dialect) bool { return d.Name() == (postgres.Dialect{}).Name() }

// Dialect returns dsn's dialect.
func Dialect(dsn string) store.Dialect {
	if IsPostgres(dsn) {
		return postgres.Dialect{}
	}
	return mysql.Dialect{}
}

// ConnOptions are the connection settings kept out of the address (see
// mysql.ConnOptions). On MySQL/MariaDB all apply; on PostgreSQL only the
// password does, and TLS comes from the URL (sslmode, sslrootcert,
// sslcert, sslkey), which a TLS option set with it would contradict.
type ConnOptions = mysql.ConnOptions

// Check parses dsn and checks o without connecting, reading o's files: an
// address that names no database is refused (PostgreSQL would silently
// use the user's name, MySQL would fail at the first query with "No
// database selected"). Its errors never echo a password; an invalid option
// is a *config.Error naming the ConnOptions field.
func Check(dsn string, o ConnOptions) error {
	_, err := check(dsn, o)
	return err
}

// check is Check, returning dsn in its driver's form (see Normalize).
func check(dsn string, o ConnOptions) (string, error) {
	dsn, err := Normalize(dsn)
	if err != nil {
		return "", err
	}
	if IsPostgres(dsn) {
		pg, err := postgresOptions(o)
		if err != nil {
			return "", err
		}
		cfg, err := pg.Config(dsn)
		if err != nil {
			return "", err
		}
		if cfg.Database == "" {
			return "", errors.New("postgres url names no database, so PostgreSQL would use the user's name: " +
				"add it after the host, e.g. postgres://user@host:5432/herald")
		}
		return dsn, nil
	}
	cfg, err := o.Config(dsn)
	if err != nil {
		return "", err
	}
	if cfg.DBName == "" {
		return "", errors.New(`mysql dsn names no database: add it after the "/", e.g. user@tcp(host:3306)/herald`)
	}
	return dsn, nil
}

// Open connects to dsn's database the dialect's way (mysql.OpenWith,
// postgres.OpenWith) with o applied, and returns the pool and the dialect.
// It refuses what Check refuses, before connecting.
func Open(ctx context.Context, dsn string, o ConnOptions) (*sql.DB, store.Dialect, error) {
	dsn, err := check(dsn, o)
	if err != nil {
		return nil, nil, err
	}
	if IsPostgres(dsn) {
		pg, err := postgresOptions(o)
		if err != nil {
			return nil, nil, err
		}
		db, err := postgres.OpenWith(ctx, dsn, pg)
		return db, postgres.Dialect{}, err
	}
	db, err := mysql.OpenWith(ctx, dsn, o)
	return db, mysql.Dialect{}, err
}

// Normalize returns dsn in the form its driver takes: a mysql:// or
// mariadb:// URL (mysql://user:password@host:port/database?param=value,
// port 3306 by default, user and password percent-encoded as in any URL)
// becomes go-sql-driver's DSN (user:password@tcp(host:port)/database?param=value);
// any other address is returned as it is. Its errors never echo the
// password.
func Normalize(dsn string) (string, error) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || !strings.EqualFold(scheme, "mysql") && !strings.EqualFold(scheme, "mariadb") {
		return dsn, nil
	}
	const form = "write mysql://user:password@host:3306/database, or the driver's user:password@tcp(host:3306)/database"
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("mysql url cannot be parsed (%s)", form)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("mysql url names no host (%s; a unix socket: user:password@unix(/path/to/socket)/database)", form)
	}
	if _, err := strconv.ParseUint(u.Port(), 10, 16); u.Port() != "" && err != nil {
		return "", fmt.Errorf("mysql url: port %q is not a number (%s)", u.Port(), form)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(name, "/") || u.Fragment != "" {
		return "", fmt.Errorf("mysql url: the path must be the database's name alone (%s)", form)
	}
	cfg := driver.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = name
	out := cfg.FormatDSN()
	if u.RawQuery != "" {
		sep := "?"
		if strings.Contains(out, "?") {
			sep = "&"
		}
		out += sep + u.RawQuery
	}
	if _, err := driver.ParseDSN(out); err != nil {
		return "", fmt.Errorf("mysql url: %w", err) // the driver's message never echoes the password
	}
	return out, nil
}

// postgresOptions are o's settings that apply to PostgreSQL; each TLS
// setting is an error naming its field.
func postgresOptions(o ConnOptions) (postgres.ConnOptions, error) {
	var errs config.Errors
	for _, f := range []struct{ field, value string }{{"TLSMode", o.TLSMode}, {"TLSCAFile", o.TLSCAFile},
		{"TLSCertFile", o.TLSCertFile}, {"TLSKeyFile", o.TLSKeyFile}, {"TLSServerName", o.TLSServerName}} {
		if f.value != "" {
			errs.Add(f.field, "applies to MySQL only: a PostgreSQL URL asks for TLS itself (sslmode, sslrootcert, sslcert, sslkey)")
		}
	}
	if err := errs.Err(); err != nil {
		return postgres.ConnOptions{}, err
	}
	return postgres.ConnOptions{Password: o.Password, PasswordFile: o.PasswordFile}, nil
}

// TLSMode says how the connections to dsn are encrypted, for logs: the
// URL's sslmode on PostgreSQL (pgx's default: prefer), o's mode on MySQL
// ("" for none).
func TLSMode(dsn string, o ConnOptions) string {
	if !IsPostgres(dsn) {
		return o.Mode()
	}
	if u, err := url.Parse(dsn); err == nil && u.Query().Get("sslmode") != "" {
		return "sslmode=" + u.Query().Get("sslmode")
	}
	return "sslmode=prefer"
}

// Address returns dsn's server and database without credentials, for logs
// and error messages.
func Address(dsn string) string {
	if IsPostgres(dsn) {
		return postgres.Address(dsn)
	}
	if normalized, err := Normalize(dsn); err == nil {
		dsn = normalized
	}
	return mysql.Address(dsn)
}

// Rebind returns a statement written with MySQL's ? placeholders in d's
// form: $1, $2, ... for PostgreSQL. A ? inside a quoted literal is left
// alone. The examples write their own SQL once this way (with
// CURRENT_TIMESTAMP(6), which both databases know, for the clock).
func Rebind(d store.Dialect, query string) string {
	if !OnPostgres(d) {
		return query
	}
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range query {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// IsDuplicate reports whether err is a unique-key violation: MySQL's
// ER_DUP_ENTRY or PostgreSQL's SQLSTATE 23505 (which also aborts the
// PostgreSQL transaction).
func IsDuplicate(err error) bool {
	var myErr *driver.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == 1062
	}
	var pgErr interface{ SQLState() string }
	return errors.As(err, &pgErr) && pgErr.SQLState() == "23505"
}

// Microseconds is an interval of ? microseconds, for Rebind'd statements:
// MySQL's INTERVAL ? MICROSECOND, PostgreSQL's multiple of an interval.
func Microseconds(d store.Dialect) string {
	if OnPostgres(d) {
		return "(? * INTERVAL '1 microsecond')"
	}
	return "INTERVAL ? MICROSECOND"
}

// Unavailable reports whether err says the PostgreSQL server cannot serve
// at all right now: a connection it refused or dropped while starting,
// stopping or restarting (SQLSTATE class 08, 57P01..57P03), or a failed
// connect. MySQL's equivalents reach callers as network errors or the
// driver's ErrInvalidConn, which they check themselves.
func Unavailable(err error) bool {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var pgErr interface{ SQLState() string }
	if !errors.As(err, &pgErr) {
		return false
	}
	switch code := pgErr.SQLState(); {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03":
		return true
	}
	return false
}

// DropDatabase drops database name (if it exists) on the server db is
// connected to, which speaks d: for the drills' and tests' throwaway
// databases. On PostgreSQL a plain DROP first (it stops an autovacuum
// worker on the database by itself, which a forced drop may not terminate
// for a non-superuser), then, if sessions remain (a killed process's), a
// forced one. Its logical replication slots go first.
func DropDatabase(ctx context.Context, db *sql.DB, d store.Dialect, name string) error {
	if !OnPostgres(d) {
		_, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
		return err
	}
	// A logical replication slot keeps its database from being dropped
	// (the WAL source's, left by a relay that died): it goes first, and
	// the connection streaming from it with it.
	if err := dropSlots(ctx, db, name); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`"`)
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "55006" { // object_in_use: other sessions
		_, err = db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
	}
	return err
}

// dropSlots drops the logical replication slots of database name, ending
// the connections that stream from them; a slot keeps its database from
// being dropped (the WAL source's, left by a relay that died).
func dropSlots(ctx context.Context, db *sql.DB, name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_replication_slots WHERE database = $1`, name).Scan(&left)
		if err != nil || left == 0 {
			return err
		}
		if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots
			WHERE database = $1 AND active_pid IS NOT NULL`, name); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
			WHERE database = $1 AND NOT active`, name); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replication slots of database %s are still in use", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
