package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

func init() {
	// The driver prints connection trouble ("closing bad idle connection")
	// with the standard logger, which would break a service's JSON logs.
	driver.SetLogger(driverLogger{})
}

// driverLogger sends the driver's messages to slog's default logger (set
// it with slog.SetDefault) as warnings.
type driverLogger struct{}

func (driverLogger) Print(v ...any) {
	slog.Warn("mysql driver: " + strings.TrimSpace(fmt.Sprint(v...)))
}

// NormalizeDSN returns dsn with the settings herald relies on: DATETIME
// columns scanned into time.Time (parseTime), read and written as UTC (loc),
// a UTC session time zone so NOW(6) agrees with Go's clock, and parameters
// interpolated client-side (one round trip per statement instead of a
// prepare and an execute; safe with utf8mb4). Settings the caller gave for
// anything else are kept.
func NormalizeDSN(dsn string) (string, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		// The driver's message never echoes the password.
		return "", fmt.Errorf("mysql dsn: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	return cfg.FormatDSN(), nil
}

// Open connects to the database named by dsn (normalized with NormalizeDSN)
// and checks that it answers; OpenWith adds TLS and a password kept out of
// the DSN.
func Open(ctx context.Context, dsn string) (*sql.DB, error) {
	return OpenWith(ctx, dsn, ConnOptions{})
}

// Address returns the network address of dsn without its credentials, for
// logs and error messages.
func Address(dsn string) string {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return "(unparsable dsn)"
	}
	return cfg.Net + "(" + cfg.Addr + ")/" + cfg.DBName
}
