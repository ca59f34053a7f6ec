package mysql_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// tlsDSN is the local stack's server as user, without a password, on
// database d.
func tlsDSN(t *testing.T, user string, d *testenv.Database) string {
	t.Helper()
	cfg, err := driver.ParseDSN(localstack.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd, cfg.DBName = user, "", d.Name
	return cfg.FormatDSN()
}

// TestOpenWithTLS connects as the stack's users that must use TLS: the
// REQUIRE SSL user with the CA (identity checked) and its password from a
// file, the REQUIRE X509 user with a client certificate; the session is
// encrypted. The REQUIRE SSL user without TLS is refused with a message
// that says why; a wrong password, for an account that needs no TLS or for
// one that does, gets no such hint (it did before: every refused
// unencrypted login was told TLS might be why); none of the refusals shows
// the password.
func TestOpenWithTLS(t *testing.T) {
	testenv.StackMySQLTLS(t, "herald") // the stack has its TLS users
	d := testenv.NewDatabase(t)
	dir := testenv.StackTLSDir()
	ca := filepath.Join(dir, "ca.pem")
	pwFile := testenv.WriteSecret(t, "tls-password", testenv.StackMySQLTLSPassword)
	x509PW := testenv.WriteSecret(t, "x509-password", testenv.StackMySQLX509Password)
	otherCA := testenv.NewCA(t, "another CA")
	tlsUser := tlsDSN(t, testenv.StackMySQLTLSUser, d)
	x509User := tlsDSN(t, testenv.StackMySQLX509User, d)
	plainUser := tlsDSN(t, "herald", d)
	canary := testenv.Canary(t)
	wrongPW := testenv.WriteSecret(t, "wrong-password", canary)

	ok := []struct {
		name string
		dsn  string
		opts mysql.ConnOptions
	}{
		{"REQUIRE SSL user, CA and host name checked", tlsUser,
			mysql.ConnOptions{TLSMode: mysql.TLSVerifyIdentity, TLSCAFile: ca, PasswordFile: pwFile}},
		{"CA file alone means verify-identity", tlsUser, mysql.ConnOptions{TLSCAFile: ca, PasswordFile: pwFile}},
		{"server name given", tlsUser,
			mysql.ConnOptions{TLSCAFile: ca, TLSServerName: "localhost", PasswordFile: pwFile}},
		{"CA checked, name not", tlsUser,
			mysql.ConnOptions{TLSMode: mysql.TLSVerifyCA, TLSCAFile: ca, TLSServerName: "not-the-server", PasswordFile: pwFile}},
		{"encrypted, server not checked", tlsUser, mysql.ConnOptions{TLSMode: mysql.TLSSkipVerify, Password: testenv.StackMySQLTLSPassword}},
		{"REQUIRE X509 user with a client certificate", x509User,
			mysql.ConnOptions{TLSCAFile: ca, TLSCertFile: filepath.Join(dir, "client.pem"), TLSKeyFile: filepath.Join(dir, "client.key"), PasswordFile: x509PW}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			db, err := mysql.OpenWith(ctx, tt.dsn, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var name, cipher string
			if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
				t.Fatal(err)
			}
			if cipher == "" {
				t.Error("the session is not encrypted")
			}
			if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)"); err != nil {
				t.Errorf("the user cannot use its database: %v", err)
			}
		})
	}

	noHint := []string{"TLS", "REQUIRE", "encrypted"}
	refused := []struct {
		name    string
		dsn     string
		opts    mysql.ConnOptions
		want    []string
		notWant []string
	}{
		{"REQUIRE SSL user without TLS", tlsUser, mysql.ConnOptions{PasswordFile: pwFile},
			[]string{"Access denied", "not encrypted", "REQUIRE SSL"}, nil},
		{"wrong password for a user that needs no TLS", plainUser, mysql.ConnOptions{PasswordFile: wrongPW},
			[]string{"Access denied"}, noHint},
		{"wrong password for the REQUIRE SSL user without TLS", tlsUser, mysql.ConnOptions{PasswordFile: wrongPW},
			[]string{"Access denied"}, noHint},
		{"REQUIRE X509 user without a client certificate", x509User, mysql.ConnOptions{TLSCAFile: ca, PasswordFile: x509PW},
			[]string{"Access denied"}, nil},
		{"server certificate from another CA", tlsUser, mysql.ConnOptions{TLSCAFile: otherCA.File, PasswordFile: pwFile},
			[]string{"certificate signed by unknown authority"}, nil},
		{"server name the certificate does not carry", tlsUser,
			mysql.ConnOptions{TLSCAFile: ca, TLSServerName: "db.example.org", PasswordFile: pwFile}, []string{"db.example.org"}, nil},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			db, err := mysql.OpenWith(ctx, tt.dsn, tt.opts)
			if err == nil {
				db.Close()
				t.Fatal("connected, want a refusal")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q says %q", err, w)
				}
			}
			for _, secret := range []string{testenv.StackMySQLTLSPassword, testenv.StackMySQLX509Password, canary} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows the password: %q", err)
				}
			}
		})
	}
}

// TestConnOptionsErrors: bad options and unusable files fail before any
// connection, naming the field and the file.
func TestConnOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := testenv.WriteSecret(t, "not.pem", "hello")
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name  string
		opts  mysql.ConnOptions
		field string
		want  string
	}{
		{"unknown mode", mysql.ConnOptions{TLSMode: "required"}, "TLSMode", "required"},
		{"verify-ca without a CA", mysql.ConnOptions{TLSMode: mysql.TLSVerifyCA}, "TLSCAFile", "verify-ca"},
		{"certificate without key", mysql.ConnOptions{TLSCertFile: "c.pem"}, "TLSKeyFile", "both"},
		{"password and password file", mysql.ConnOptions{Password: "p", PasswordFile: "f"}, "Password", "not both"},
		{"missing CA file", mysql.ConnOptions{TLSCAFile: missing}, "TLSCAFile", missing},
		{"CA file that is not PEM", mysql.ConnOptions{TLSCAFile: notPEM}, "TLSCAFile", "no PEM certificate"},
		{"missing password file", mysql.ConnOptions{PasswordFile: missing}, "PasswordFile", "no such file"},
		{"empty password file", mysql.ConnOptions{PasswordFile: testenv.WriteSecret(t, "empty", "")}, "PasswordFile", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.opts.Config(localstack.MySQLDSNDefault)
			var oe *mysql.ConfigError
			if !errors.As(err, &oe) || oe.Field != tt.field || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Config() error %v, want a *ConfigError on %s saying %q", err, tt.field, tt.want)
			}
		})
	}
}

// TestMinimalRowImage: a pool opened with MinimalRowImage logs a minimal
// row image when herald's user may set it (the stack grants BINLOG ADMIN),
// and the same login without the privilege gets a working pool that logs
// the full image, no error.
func TestMinimalRowImage(t *testing.T) {
	d := testenv.NewDatabase(t)
	ctx := context.Background()
	image := func(dsn string, o mysql.ConnOptions) string {
		t.Helper()
		db, err := mysql.OpenWith(ctx, dsn, o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxIdleConns(0) // each query on a new session: every session has it
		var got string
		for range 3 {
			img, logBin, err := mysql.RowImage(ctx, db)
			if err != nil || !logBin {
				t.Fatalf("row image %q, binlog %v (%v)", img, logBin, err)
			}
			if got != "" && img != got {
				t.Fatalf("the pool's sessions disagree: %s and %s", got, img)
			}
			got = img
		}
		return got
	}
	if got := image(d.DSN, mysql.ConnOptions{MinimalRowImage: true}); got != "MINIMAL" {
		t.Errorf("with BINLOG ADMIN: binlog_row_image %s, want MINIMAL", got)
	}
	if got := image(d.DSN, mysql.ConnOptions{}); got != "FULL" {
		t.Errorf("without asking: binlog_row_image %s, want the server's FULL", got)
	}

	const password = "s3cret-noadmin"
	user := "herald_noadmin_" + d.Name[len(d.Name)-8:]
	testenv.MariaDBRoot(t, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY '"+password+"'",
		"GRANT ALL PRIVILEGES ON `"+d.Name+"`.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, password
	if got := image(cfg.FormatDSN(), mysql.ConnOptions{MinimalRowImage: true}); got != "FULL" {
		t.Errorf("without BINLOG ADMIN: binlog_row_image %s, want FULL (and a working pool)", got)
	}
}
