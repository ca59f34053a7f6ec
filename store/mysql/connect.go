package mysql

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/internal/config"
)

// TLS modes of ConnOptions.TLSMode. They follow the MySQL client's
// --ssl-mode names; the driver's own tls= values (true, skip-verify,
// preferred) stay available in the DSN.
const (
	// TLSVerifyIdentity encrypts and checks the server's certificate
	// against the CA and the host name dialled (or TLSServerName).
	TLSVerifyIdentity = "verify-identity"
	// TLSVerifyCA encrypts and checks the server's certificate against the
	// CA, whatever name it carries.
	TLSVerifyCA = "verify-ca"
	// TLSSkipVerify encrypts without checking the server's certificate:
	// it protects against eavesdropping, not against impersonation.
	TLSSkipVerify = "skip-verify"
)

// ConnOptions are the connection settings kept out of the DSN: TLS, and
// the password, from a file or a variable, so that it is never in a DSN, a
// command line, a process list or a log line. The zero value changes
// nothing.
type ConnOptions struct {
	// TLSMode is verify-identity, verify-ca or skip-verify. Defaults to ""
	// (no TLS unless the DSN asks for it), or verify-identity when
	// TLSCAFile or TLSCertFile is set.
	TLSMode string
	// TLSCAFile is a PEM file of the CAs that sign the server's
	// certificate. Defaults to "" (the system roots).
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are a client certificate and its
	// unencrypted key (PEM), for accounts created REQUIRE X509. Both or
	// neither. Defaults to "".
	TLSCertFile string
	// TLSKeyFile is TLSCertFile's private key. Defaults to "".
	TLSKeyFile string
	// TLSServerName is the name the server's certificate must carry when
	// it is not the host dialled. Defaults to "" (the DSN's host).
	TLSServerName string
	// Password replaces the DSN's password. Defaults to "" (the DSN's).
	Password string
	// PasswordFile holds the password (a trailing line break is dropped);
	// it replaces the DSN's. Not with Password. Defaults to "".
	PasswordFile string
	// MinimalRowImage asks for the pool's sessions to log a minimal row
	// image (binlog_row_image=MINIMAL): an UPDATE of herald's (a mark, a
	// hold, a failure) then puts the primary key and the columns it sets
	// into the ROW binlog, not the whole ~1 KiB row twice. The server
	// allows it with BINLOG ADMIN (MariaDB) or SESSION_VARIABLES_ADMIN
	// (MySQL 8); without, the pool is opened without it (RowImage tells
	// which). For herald's own pools only: a writer's rows must stay whole
	// for the binlog source. Defaults to false.
	MinimalRowImage bool
}

// ConfigError is one invalid ConnOptions field, or a file it names that
// cannot be used; Validate joins one per invalid field (errors.As finds
// them). Its Field names the field and Msg says what is wrong; the same
// type is every herald package's ConfigError.
type ConfigError = config.Error

// Mode is the TLS mode in effect: TLSMode, or verify-identity when only
// files are given, or "" (none).
func (o ConnOptions) Mode() string {
	if o.TLSMode == "" && (o.TLSCAFile != "" || o.TLSCertFile != "") {
		return TLSVerifyIdentity
	}
	return o.TLSMode
}

// Validate checks o without reading its files, reporting every invalid
// field at once; each error is a *ConfigError naming the field.
func (o ConnOptions) Validate() error {
	var errs config.Errors
	bad := errs.Add
	switch o.TLSMode {
	case "", TLSVerifyIdentity, TLSVerifyCA, TLSSkipVerify:
	default:
		bad("TLSMode", "want %s, %s or %s, got %q", TLSVerifyIdentity, TLSVerifyCA, TLSSkipVerify, o.TLSMode)
	}
	if o.Mode() == "" && (o.TLSServerName != "" || o.TLSKeyFile != "") {
		bad("TLSMode", "required with a TLS server name or key file")
	}
	if o.Mode() == TLSVerifyCA && o.TLSCAFile == "" {
		bad("TLSCAFile", "required with TLS mode %s", TLSVerifyCA)
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		if o.TLSCertFile == "" {
			bad("TLSCertFile", "required with a key file (a client certificate needs both)")
		} else {
			bad("TLSKeyFile", "required with a certificate file (a client certificate needs both)")
		}
	}
	if o.Password != "" && o.PasswordFile != "" {
		bad("Password", "give the password or a password file, not both")
	}
	return errs.Err()
}

// Config returns the driver configuration of dsn (normalized like
// NormalizeDSN) with o applied: the password read from its file and a TLS
// configuration registered with the driver. Its FormatDSN names the TLS
// configuration, never the file contents; it does include the password.
func (o ConnOptions) Config(dsn string) (*driver.Config, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	normalized, err := NormalizeDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := driver.ParseDSN(normalized)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	switch {
	case o.Password != "":
		cfg.Passwd = o.Password
	case o.PasswordFile != "":
		pw, err := config.ReadPasswordFile(o.PasswordFile)
		if err != nil {
			return nil, &ConfigError{Field: "PasswordFile", Msg: err.Error()}
		}
		cfg.Passwd = pw
	}
	if o.Mode() == "" {
		return cfg, nil
	}
	if cfg.TLSConfig != "" && cfg.TLSConfig != "false" {
		return nil, &ConfigError{Field: "TLSMode", Msg: fmt.Sprintf("the DSN asks for tls=%s too; use one or the other", cfg.TLSConfig)}
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	// Registered under a name derived from the settings, so the same
	// options always map to the same name and a DSN formatted from cfg
	// works in this process.
	sum := sha256.Sum256([]byte(strings.Join([]string{o.Mode(), o.TLSCAFile, o.TLSCertFile, o.TLSKeyFile, tlsCfg.ServerName}, "\x00")))
	name := "herald-" + o.Mode() + "-" + hex.EncodeToString(sum[:6])
	if err := driver.RegisterTLSConfig(name, tlsCfg); err != nil {
		return nil, fmt.Errorf("register mysql tls config: %w", err)
	}
	cfg.TLSConfig = name
	cfg.TLS = tlsCfg
	return cfg, nil
}

// tlsConfig builds the TLS configuration; without TLSServerName, the
// driver checks the DSN's host.
func (o ConnOptions) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
	if o.TLSCAFile != "" {
		b, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, &ConfigError{Field: "TLSCAFile", Msg: pathError(o.TLSCAFile, err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, &ConfigError{Field: "TLSCAFile", Msg: o.TLSCAFile + ": no PEM certificate in it"}
		}
		cfg.RootCAs = pool
	}
	if o.TLSCertFile != "" {
		certPEM, err := os.ReadFile(o.TLSCertFile)
		if err != nil {
			return nil, &ConfigError{Field: "TLSCertFile", Msg: pathError(o.TLSCertFile, err)}
		}
		keyPEM, err := os.ReadFile(o.TLSKeyFile)
		if err != nil {
			return nil, &ConfigError{Field: "TLSKeyFile", Msg: pathError(o.TLSKeyFile, err)}
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, &ConfigError{Field: "TLSKeyFile", Msg: fmt.Sprintf("%s and %s: %v", o.TLSCertFile, o.TLSKeyFile, err)}
		}
		if now := time.Now(); now.After(cert.Leaf.NotAfter) {
			return nil, &ConfigError{Field: "TLSCertFile", Msg: fmt.Sprintf("%s: certificate expired on %s", o.TLSCertFile, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch o.Mode() {
	case TLSSkipVerify:
		cfg.InsecureSkipVerify = true
	case TLSVerifyCA:
		// Chain checked against the CA, name not checked: crypto/tls has
		// no such mode, so verify the chain by hand.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// pathError says what is wrong with a file without Go's operation prefix.
func pathError(file string, err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return file + ": " + pe.Err.Error()
	}
	return file + ": " + err.Error()
}

// OpenWith connects like Open, with o applied (see ConnOptions.Config).
// When the server refuses an unencrypted connection's login and the same
// login succeeds over TLS, the error says the account requires TLS
// (requiresTLS); a wrong password gets no such hint.
func OpenWith(ctx context.Context, dsn string, o ConnOptions) (*sql.DB, error) {
	cfg, err := o.Config(dsn)
	if err != nil {
		return nil, err
	}
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetConnMaxLifetime(5 * time.Minute)
	db.SetConnMaxIdleTime(time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		var me *driver.MySQLError
		if errors.As(err, &me) && me.Number == errAccessDenied && requiresTLS(ctx, cfg) {
			return nil, fmt.Errorf("connect to mysql at %s: %w (the connection was not encrypted, and the account "+
				"logs in over TLS: it requires TLS (REQUIRE SSL); connect with TLS)", Address(dsn), err)
		}
		return nil, fmt.Errorf("connect to mysql at %s: %w", Address(dsn), err)
	}
	if !o.MinimalRowImage {
		return db, nil
	}
	if allowed, err := minimalRowImageAllowed(pingCtx, db); err != nil || !allowed {
		return db, err // the pool as it is: RowImage says FULL
	}
	db.Close()
	cfg.Params = maps.Clone(cfg.Params)
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["binlog_row_image"] = "'MINIMAL'" // set by the driver on every new connection
	if connector, err = driver.NewConnector(cfg); err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	db = sql.OpenDB(connector)
	db.SetConnMaxLifetime(5 * time.Minute)
	db.SetConnMaxIdleTime(time.Minute)
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to mysql at %s: %w", Address(dsn), err)
	}
	return db, nil
}

// errNoPrivilege is ER_SPECIFIC_ACCESS_DENIED_ERROR: the statement needs a
// privilege the account lacks.
const errNoPrivilege = 1227

// minimalRowImageAllowed asks the server, on one session of db, whether
// herald's user may set its sessions' binlog_row_image, and leaves that
// session as it was.
func minimalRowImageAllowed(ctx context.Context, db *sql.DB) (bool, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "SET SESSION binlog_row_image = 'MINIMAL'")
	var me *driver.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == errNoPrivilege:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("set binlog_row_image: %w", err)
	}
	_, err = conn.ExecContext(ctx, "SET SESSION binlog_row_image = DEFAULT")
	return true, err
}

// RowImage reads the binlog row image of db's sessions, and whether the
// server writes a binlog at all: what one of herald's UPDATEs costs it.
func RowImage(ctx context.Context, db *sql.DB) (image string, logBin bool, err error) {
	err = db.QueryRowContext(ctx, "SELECT @@session.binlog_row_image, @@global.log_bin").Scan(&image, &logBin)
	return image, logBin, err
}

// errAccessDenied is ER_ACCESS_DENIED_ERROR: the server refused the login.
const errAccessDenied = 1045

// requiresTLS says whether the login cfg describes, refused without TLS,
// succeeds over TLS: the server answers an account created REQUIRE SSL
// exactly as it answers a wrong password (1045), so only a second attempt
// tells them apart. It tries only after an unencrypted attempt, and only
// once. The server's certificate is not checked: the attempt proves only
// that the account logs in over TLS, and reveals nothing the unencrypted
// attempt did not (with caching_sha2_password that one already accepted
// an unchecked RSA key from the server for the password). A server that
// counts failed logins (FAILED_LOGIN_ATTEMPTS) sees a wrong password
// twice.
func requiresTLS(ctx context.Context, cfg *driver.Config) bool {
	if cfg.TLS != nil || cfg.TLSConfig != "" && cfg.TLSConfig != "false" {
		return false
	}
	probe := cfg.Clone()
	probe.TLSConfig = ""
	probe.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}
	connector, err := driver.NewConnector(probe)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := connector.Connect(ctx)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
