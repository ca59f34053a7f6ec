package database_test

import (
	"errors"
	"fmt"
	"testing"

	driver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-outbox/herald/internal/config"
	"github.com/herald-outbox/herald/internal/database"
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
