package postgres_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestIsURL(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u:p@db:5432/app":             true,
		"postgresql://u:p@db/app?sslmode=verify": true,
		"POSTGRES://db/app":                      true,
		"u:p@tcp(db:3306)/app":                   false,
		"herald:herald@tcp(127.0.0.1:3306)/x":    false,
		"host=db user=u dbname=app":              false,
		"mysql://u:p@db/app":                     false,
	} {
		if got := postgres.IsURL(dsn); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", dsn, got, want)
		}
	}
}

func TestParseURL(t *testing.T) {
	cfg, err := postgres.ParseURL("postgres://app:secret@db:6432/orders?sslmode=disable&application_name=orders-api")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "db" || cfg.Port != 6432 || cfg.Database != "orders" || cfg.User != "app" {
		t.Errorf("parsed %s:%d/%s as %s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	}
	if cfg.RuntimeParams["timezone"] != "UTC" || cfg.RuntimeParams["application_name"] != "orders-api" {
		t.Errorf("runtime params %v: want timezone UTC and the URL's application_name", cfg.RuntimeParams)
	}
	if cfg, _ := postgres.ParseURL("postgres://app@db/orders"); cfg.RuntimeParams["application_name"] != "herald" {
		t.Errorf("application_name %q, want herald by default", cfg.RuntimeParams["application_name"])
	}
	for _, bad := range []string{
		"postgres://app:hunter2@db:notaport/orders",
		"postgres://app:hunter2@[::1/orders",
		"postgres://app:hunter2@db/orders%zz",
		"postgres://app:hunter2@db/orders?sslmode=sometimes",
		"postgres://app:hunter2@db/orders?connect_timeout=soon",
	} {
		_, err := postgres.ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) accepted it", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %q leaks the password", err)
		}
		t.Logf("%s: %v", bad, err)
	}
}

func TestAddress(t *testing.T) {
	if got := postgres.Address("postgres://app:secret@db:5432/orders?sslmode=require"); got != "db:5432/orders" {
		t.Errorf("Address = %q", got)
	}
}

// TestOpenOverTLS: against the stack's TLS-only roles, TLS comes from the
// URL (sslmode=verify-full, sslrootcert; sslcert and sslkey for a client
// certificate) and the password from ConnOptions' file: the password role
// connects over TLS with its password read from the file, the certificate
// role with its certificate alone, and neither without TLS. A password
// given both ways, or an empty or missing file, is refused naming the
// field, before any connection.
func TestOpenOverTLS(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	ctx := context.Background()
	tlsURL, opts := testenv.StackPostgresTLS(t, d.Name)
	db, err := postgres.OpenWith(ctx, tlsURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var user string
	var ssl bool
	if err := db.QueryRow("SELECT current_user, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&user, &ssl); err != nil {
		t.Fatal(err)
	}
	if user != testenv.StackMySQLTLSUser || !ssl {
		t.Errorf("connected as %s, TLS %v; want %s over TLS", user, ssl, testenv.StackMySQLTLSUser)
	}
	// The role uses what herald's migrations created as the owner's.
	if _, err := postgres.NewStore(db).ReadBacklog(ctx); err != nil {
		t.Errorf("backlog as %s: %v", user, err)
	}

	plain := strings.Replace(tlsURL, "sslmode=verify-full", "sslmode=disable", 1)
	if _, err := postgres.OpenWith(ctx, plain, opts); err == nil || !strings.Contains(err.Error(), "no encryption") {
		t.Errorf("the TLS-only role without TLS: %v, want refused by pg_hba.conf", err)
	}

	dir := testenv.StackTLSDir()
	certURL := strings.Replace(tlsURL, testenv.StackMySQLTLSUser+"@", testenv.StackMySQLX509User+"@", 1) +
		"&sslcert=" + filepath.Join(dir, "client.pem") + "&sslkey=" + filepath.Join(dir, "client.key")
	cdb, err := postgres.Open(ctx, certURL)
	if err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	defer cdb.Close()
	if err := cdb.QueryRow("SELECT current_user").Scan(&user); err != nil || user != testenv.StackMySQLX509User {
		t.Errorf("client certificate logged in as %q (%v), want %s", user, err, testenv.StackMySQLX509User)
	}

	empty := testenv.WriteSecret(t, "empty", "")
	for _, tc := range []struct {
		opts  postgres.ConnOptions
		field string
	}{
		{postgres.ConnOptions{Password: "x", PasswordFile: opts.PasswordFile}, "Password"},
		{postgres.ConnOptions{PasswordFile: empty}, "PasswordFile"},
		{postgres.ConnOptions{PasswordFile: filepath.Join(t.TempDir(), "missing")}, "PasswordFile"},
	} {
		_, err := postgres.OpenWith(ctx, tlsURL, tc.opts)
		var ce *postgres.ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("OpenWith(%+v): %v, want a ConfigError of %s", tc.opts, err, tc.field)
		}
	}
}
