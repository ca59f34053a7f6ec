package database_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/postgres"
)

func TestDialect(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:p@db/app":                  "postgres",
		"postgresql://u:p@db/app?sslmode=verify": "postgres",
		"u:p@tcp(db:3306)/app":                   "mysql",
		"herald:herald@tcp(127.0.0.1:3306)/x":    "mysql",
	} {
		if got := database.Dialect(dsn).Name(); got != want {
			t.Errorf("Dialect(%q) = %s, want %s", dsn, got, want)
		}
	}
}

func TestRebind(t *testing.T) {
	q := "SELECT a FROM t WHERE b = ? AND c = 'why?' AND d IN (?, ?)"
	if got := database.Rebind(mysql.Dialect{}, q); got != q {
		t.Errorf("MySQL: %q", got)
	}
	if got, want := database.Rebind(postgres.Dialect{}, q), "SELECT a FROM t WHERE b = $1 AND c = 'why?' AND d IN ($2, $3)"; got != want {
		t.Errorf("PostgreSQL: %q, want %q", got, want)
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name                   string
		err                    error
		duplicate, unavailable bool
	}{
		{"mysql duplicate", &driver.MySQLError{Number: 1062}, true, false},
		{"postgres unique violation, wrapped", fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), true, false},
		{"postgres shutting down", &pgconn.PgError{Code: "57P03"}, false, true},
		{"postgres terminated by admin", &pgconn.PgError{Code: "57P01"}, false, true},
		{"postgres connection failure", &pgconn.PgError{Code: "08006"}, false, true},
		{"postgres deadlock", &pgconn.PgError{Code: "40P01"}, false, false},
		{"mysql deadlock", &driver.MySQLError{Number: 1213}, false, false},
		{"plain", errors.New("no"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := database.IsDuplicate(tt.err); got != tt.duplicate {
				t.Errorf("IsDuplicate = %v, want %v", got, tt.duplicate)
			}
			if got := database.Unavailable(tt.err); got != tt.unavailable {
				t.Errorf("Unavailable = %v, want %v", got, tt.unavailable)
			}
		})
	}
}

// TestConnOptionsPerDatabase: on a PostgreSQL URL every TLS option is
// refused naming its field (the URL asks for TLS), every one at once, and
// the password options apply; on a MySQL DSN they are MySQL's. TLSMode
// says what a log line shows.
func TestConnOptionsPerDatabase(t *testing.T) {
	const pg = "postgres://u@db:5432/app?sslmode=verify-full"
	err := database.Check(pg, database.ConnOptions{TLSMode: mysql.TLSVerifyCA, TLSCAFile: "/ca.pem", TLSServerName: "db"})
	var fields []string
	for _, leaf := range config.Leaves(err) {
		var ce *config.Error
		if errors.As(leaf, &ce) {
			fields = append(fields, ce.Field)
		}
	}
	if fmt.Sprint(fields) != "[TLSMode TLSCAFile TLSServerName]" {
		t.Errorf("TLS options on a PostgreSQL URL: fields %v (%v), want TLSMode TLSCAFile TLSServerName", fields, err)
	}
	if err := database.Check(pg, database.ConnOptions{Password: "p"}); err != nil {
		t.Errorf("a password for PostgreSQL: %v", err)
	}
	var ce *config.Error
	if err := database.Check(pg, database.ConnOptions{Password: "p", PasswordFile: "/f"}); !errors.As(err, &ce) || ce.Field != "Password" {
		t.Errorf("a password given twice for PostgreSQL: %v, want a ConfigError of Password", err)
	}
	if err := database.Check("u@tcp(db:3306)/app", database.ConnOptions{TLSMode: "sometimes"}); !errors.As(err, &ce) || ce.Field != "TLSMode" {
		t.Errorf("a bad MySQL TLS mode: %v, want a ConfigError of TLSMode", err)
	}
	for _, tc := range []struct {
		dsn  string
		opts database.ConnOptions
		want string
	}{
		{pg, database.ConnOptions{}, "sslmode=verify-full"},
		{"postgres://u@db/app", database.ConnOptions{}, "sslmode=prefer"},
		{"u@tcp(db:3306)/app", database.ConnOptions{TLSCAFile: "/ca.pem"}, mysql.TLSVerifyIdentity},
		{"u@tcp(db:3306)/app", database.ConnOptions{}, ""},
	} {
		if got := database.TLSMode(tc.dsn, tc.opts); got != tc.want {
			t.Errorf("TLSMode(%s, %+v) = %q, want %q", tc.dsn, tc.opts, got, tc.want)
		}
	}
}

// TestAddressMustNameADatabase: an address naming no database is refused
// by Check and by Open before connecting, on both databases (a MySQL DSN
// ending in "/" made migrate status report version 0 and migrate up fail
// with "No database selected"; a PostgreSQL URL without one silently used
// the user's name). The refusal says what to write.
func TestAddressMustNameADatabase(t *testing.T) {
	tests := []struct {
		name, dsn string
		want      string // "" for accepted
	}{
		{"mysql with a database", "u:pw@tcp(127.0.0.1:1)/app", ""},
		{"mysql ending in /", "u:pw@tcp(127.0.0.1:1)/", "names no database"},
		{"mysql with parameters only", "u:pw@tcp(127.0.0.1:1)/?parseTime=true", "names no database"},
		{"mysql url without a path", "mysql://u:pw@127.0.0.1:1", "names no database"},
		{"postgres with a database", "postgres://u:pw@127.0.0.1:1/app", ""},
		{"postgres with dbname", "postgres://u:pw@127.0.0.1:1/?dbname=app", ""},
		{"postgres without a path", "postgres://u:pw@127.0.0.1:1", "names no database"},
		{"postgres ending in /", "postgresql://u:pw@127.0.0.1:1/?sslmode=disable", "names no database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PGDATABASE", "") // pgx would take the database from it
			err := database.Check(tt.dsn, database.ConnOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.want == "":
				return
			case err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "/herald"):
				t.Fatalf("Check: %v, want an error saying %q and how to name one", err, tt.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if db, _, err := database.Open(ctx, tt.dsn, database.ConnOptions{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				if db != nil {
					db.Close()
				}
				t.Errorf("Open: %v, want %q before connecting", err, tt.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestNormalize: a mysql:// (or mariadb://) URL becomes the driver's DSN,
// its user and password percent-decoded, port 3306 by default, parameters
// kept; what cannot be converted is refused saying what to write, never
// echoing the password; every other address is left as it is.
func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{"url", "mysql://app:secret@db.internal:3307/app?tls=true", "app:secret@tcp(db.internal:3307)/app?tls=true", ""},
		{"default port", "mysql://app:secret@db/app", "app:secret@tcp(db:3306)/app", ""},
		{"mariadb scheme, any case", "MariaDB://app@db/app", "app@tcp(db:3306)/app", ""},
		{"encoded password", "mysql://app:p%40ss%2Fw:rd@db/app", "app:p@ss/w:rd@tcp(db:3306)/app", ""},
		{"ipv6 host", "mysql://app@[::1]:3306/app", "app@tcp([::1]:3306)/app", ""},
		{"driver dsn untouched", "app:secret@tcp(db:3306)/app", "app:secret@tcp(db:3306)/app", ""},
		{"postgres url untouched", "postgres://app@db/app", "postgres://app@db/app", ""},
		{"no host", "mysql://app:secret@/app", "", "names no host"},
		{"bad port", "mysql://app:secret@db:port/app", "", "mysql://user:password@host:3306/database"},
		{"path beyond the database", "mysql://app:secret@db/app/more", "", "the database's name alone"},
		{"unknown parameter value", "mysql://app:secret@db/app?parseTime=maybe", "", "mysql url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := database.Normalize(tt.in)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Normalize(%q) = %q, %v; want an error saying %q", tt.in, got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the error shows the password: %v", err)
				}
			case err != nil:
				t.Fatalf("Normalize(%q): %v", tt.in, err)
			case got != tt.want:
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := database.Dialect("mysql://app@db/app").Name(); got != "mysql" {
		t.Errorf("Dialect of a mysql:// URL: %s", got)
	}
	if got := database.Address("mysql://app:secret@db/app"); got != "tcp(db:3306)/app" {
		t.Errorf("Address of a mysql:// URL: %q", got)
	}
}
