package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/herald-outbox/herald/store/postgres"
)

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"serialization failure, wrapped", fmt.Errorf("handle: %w", &pgconn.PgError{Code: "40001"}), true},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, true},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, true},
		{"admin shutdown (fast stop, terminated backend)", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"read-only standby during a failover", &pgconn.PgError{Code: "25006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"transaction aborted", &pgconn.PgError{Code: "25P02"}, false},
		{"missing table", &pgconn.PgError{Code: "42P01"}, false},
		{"business error", errors.New("no such warehouse"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (postgres.Dialect{}).IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
