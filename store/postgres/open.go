package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/herald-outbox/herald/internal/config"
)

// IsURL reports whether dsn is a PostgreSQL connection URL
// (postgres://... or postgresql://...).
func IsURL(dsn string) bool {
	scheme, _, ok := strings.Cut(dsn, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// ParseURL parses a connection URL and adds what herald relies on: the
// session in UTC (herald never depends on it, but operators' casts to
// timestamp and the server's log then agree with herald's UTC times) and
// application_name "herald" unless the URL names one. Every setting pgx
// knows is accepted (sslmode, connect_timeout, default_query_exec_mode,
// ...). Its errors never echo the password.
func ParseURL(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", parseError(err))
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "herald"
	}
	return cfg, nil
}

// parseError is pgx's reason a URL did not parse, without the URL: pgx's
// message quotes it with the password masked as best it can, and a URL
// error inside quotes it whole.
func parseError(err error) error {
	var perr *pgconn.ParseConfigError
	if !errors.As(err, &perr) {
		return errors.New("cannot be parsed")
	}
	reason := "cannot be parsed"
	msg := perr.Error() // "cannot parse `<url>`: <reason>[ (<inner>)]"
	if i := strings.Index(msg, "`: "); strings.HasPrefix(msg, "cannot parse `") && i >= 0 {
		reason = msg[i+3:]
	}
	inner := perr.Unwrap()
	if inner == nil {
		return errors.New(reason)
	}
	reason, _, _ = strings.Cut(reason, " (")
	var uerr *url.Error
	if errors.As(inner, &uerr) {
		inner = uerr.Err
	}
	return fmt.Errorf("%s: %w", reason, inner)
}

// ConnOptions are the connection settings kept out of the URL: the
// password, from a file or a variable, so that it is never in a URL, a
// command line, a process list or a log line. TLS is the URL's own
// (sslmode, sslrootcert, sslcert, sslkey), as for every PostgreSQL client.
// The zero value changes nothing.
type ConnOptions struct {
	// Password replaces the URL's password. Defaults to "" (the URL's).
	Password string
	// PasswordFile holds the password (a trailing line break is dropped);
	// it replaces the URL's. Not with Password. Defaults to "".
	PasswordFile string
}

// ConfigError is one invalid ConnOptions field, or a file it names that
// cannot be used: every herald package's ConfigError.
type ConfigError = config.Error

// Validate checks o without reading its file; each error is a
// *ConfigError naming the field.
func (o ConnOptions) Validate() error {
	if o.Password != "" && o.PasswordFile != "" {
		return &ConfigError{Field: "Password", Msg: "give the password or a password file, not both"}
	}
	return nil
}

// Config returns the connection configuration of dsn (see ParseURL) with
// o applied: the password read from its file.
func (o ConnOptions) Config(dsn string) (*pgx.ConnConfig, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg, err := ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Password != "":
		cfg.Password = o.Password
	case o.PasswordFile != "":
		pw, err := config.ReadPasswordFile(o.PasswordFile)
		if err != nil {
			return nil, &ConfigError{Field: "PasswordFile", Msg: err.Error()}
		}
		cfg.Password = pw
	}
	return cfg, nil
}

// Open connects to the database dsn names (a postgres:// URL, see
// ParseURL) through pgx's database/sql driver and checks that it answers.
// Times read from it are in UTC. OpenWith adds a password kept out of the
// URL.
func Open(ctx context.Context, dsn string) (*sql.DB, error) {
	return OpenWith(ctx, dsn, ConnOptions{})
}

// OpenWith connects like Open, with o applied (see ConnOptions.Config).
func OpenWith(ctx context.Context, dsn string, o ConnOptions) (*sql.DB, error) {
	cfg, err := o.Config(dsn)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(scanTimesInUTC))
	db.SetConnMaxLifetime(5 * time.Minute)
	db.SetConnMaxIdleTime(time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres at %s: %w", Address(dsn), err)
	}
	return db, nil
}

// scanTimesInUTC makes timestamptz values scan as UTC times (pgx's default
// is the process's local zone): the same instants, printed as herald's
// logs and the MySQL dialect print them.
func scanTimesInUTC(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
		Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
	return nil
}

// Address returns the host, port and database of dsn without credentials,
// for logs and error messages.
func Address(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return "(unparsable url)"
		}
		return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	}
	return u.Host + u.Path
}
