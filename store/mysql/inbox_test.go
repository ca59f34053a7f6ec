package mysql_test

import (
	"errors"
	"fmt"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/mysql"
)

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock", &driver.MySQLError{Number: 1213}, true},
		{"lock wait timeout, wrapped", fmt.Errorf("handle: %w", &driver.MySQLError{Number: 1205}), true},
		{"connection killed", &driver.MySQLError{Number: 1927}, true},
		{"read-only during a failover", &driver.MySQLError{Number: 1290}, true},
		{"invalid connection", driver.ErrInvalidConn, true},
		{"duplicate key", &driver.MySQLError{Number: 1062}, false},
		{"missing table", &driver.MySQLError{Number: 1146}, false},
		{"business error", errors.New("no such warehouse"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (mysql.Dialect{}).IsTransient(tt.err); got != tt.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
