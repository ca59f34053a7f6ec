package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	driver "github.com/go-sql-driver/mysql"
)

// Server error numbers the reader tells apart.
const (
	errNoSuchTable          = 1146 // ER_NO_SUCH_TABLE
	errAccessDenied         = 1045 // ER_ACCESS_DENIED_ERROR
	errDBAccessDenied       = 1044 // ER_DBACCESS_DENIED_ERROR
	errSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR: "you need the X privilege"
	errTableAccessDenied    = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errNoBinaryLogging      = 1381 // ER_NO_BINARY_LOGGING
	errParse                = 1064 // ER_PARSE_ERROR
	errFatalReadingBinlog   = 1236 // ER_MASTER_FATAL_ERROR_READING_BINLOG
)

// flavorOf returns go-mysql's flavor of the server db talks to: "mariadb"
// or "mysql".
func flavorOf(ctx context.Context, db *sql.DB) (string, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", fmt.Errorf("read server version: %w", err)
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return gomysql.MariaDBFlavor, nil
	}
	return gomysql.MySQLFlavor, nil
}

// monitorGrant names the privilege that reads the binlog's head and files.
func monitorGrant(flavor string) string {
	if flavor == gomysql.MariaDBFlavor {
		return "BINLOG MONITOR"
	}
	return "REPLICATION CLIENT"
}

// Head returns the server's current end of the binlog: a stream opened from
// it returns exactly the transactions committed after it was read. It is a
// GTID position when the server has GTIDs (MariaDB's @@gtid_binlog_pos,
// MySQL's @@gtid_executed with gtid_mode=ON), else the current binlog file
// and offset. It needs BINLOG MONITOR (MariaDB) or REPLICATION CLIENT
// (MySQL) for the file position.
func Head(ctx context.Context, db *sql.DB) (Position, error) {
	flavor, err := flavorOf(ctx, db)
	if err != nil {
		return Position{}, fmt.Errorf("binlog head: %w", err)
	}
	switch flavor {
	case gomysql.MariaDBFlavor:
		var pos string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&pos); err != nil {
			return Position{}, fmt.Errorf("binlog head: read @@gtid_binlog_pos: %w", err)
		}
		// Empty until the binlog holds a transaction: then only the file
		// position says where "now" is.
		if strings.TrimSpace(pos) != "" {
			st, err := parseMariaDBGTIDs(pos)
			if err != nil {
				return Position{}, fmt.Errorf("binlog head: @@gtid_binlog_pos: %w", err)
			}
			return Position{kind: kindMariaDB, gtid: st.String()}, nil
		}
	default:
		var mode, executed sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_mode, @@GLOBAL.gtid_executed").Scan(&mode, &executed); err != nil {
			return Position{}, fmt.Errorf("binlog head: read @@gtid_mode: %w", err)
		}
		if strings.EqualFold(mode.String, "ON") && strings.TrimSpace(executed.String) != "" {
			set, err := parseMySQLGTIDs(executed.String)
			if err != nil {
				return Position{}, fmt.Errorf("binlog head: @@gtid_executed: %w", err)
			}
			return Position{kind: kindMySQL, gtid: set.String()}, nil
		}
	}
	file, offset, err := binlogStatus(ctx, db, flavor)
	if err != nil {
		return Position{}, fmt.Errorf("binlog head: %w", err)
	}
	return Position{kind: kindFile, file: file, offset: offset}, nil
}

// binlogStatus reads the current binlog file and offset (SHOW MASTER
// STATUS, renamed SHOW BINARY LOG STATUS by MySQL 8.2, which 8.4 requires).
func binlogStatus(ctx context.Context, db *sql.DB, flavor string) (string, uint32, error) {
	queries := []string{"SHOW MASTER STATUS"}
	if flavor == gomysql.MySQLFlavor {
		queries = []string{"SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"}
	}
	var err error
	for _, q := range queries {
		var file string
		var offset uint32
		var found bool
		found, err = firstRow(ctx, db, q, func(cols []sql.RawBytes) error {
			if len(cols) < 2 {
				return fmt.Errorf("%s returned %d columns", q, len(cols))
			}
			n, err := strconv.ParseUint(string(cols[1]), 10, 32)
			if err != nil {
				return fmt.Errorf("%s: position %q: %w", q, cols[1], err)
			}
			file, offset = string(cols[0]), uint32(n)
			return nil
		})
		if serverErrno(err) == errParse {
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", q, withGrantHint(err, flavor))
		}
		if !found {
			return "", 0, errors.New(q + " returned nothing: binary logging is off (log_bin)")
		}
		return file, offset, nil
	}
	return "", 0, err
}

// firstRow runs q and passes its first row's columns to scan; found is false
// when q returned no row.
func firstRow(ctx context.Context, db *sql.DB, q string, scan func([]sql.RawBytes) error) (found bool, err error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, err
	}
	if !rows.Next() {
		return false, rows.Err()
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	if err := rows.Scan(dest...); err != nil {
		return false, err
	}
	return true, scan(raw)
}

// serverErrno returns the server's error number carried by err (from
// database/sql or from the replication connection), or 0.
func serverErrno(err error) uint16 {
	var de *driver.MySQLError
	if errors.As(err, &de) {
		return de.Number
	}
	var ge *gomysql.MyError
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// withGrantHint adds to a privilege error of a query the grant that fixes
// it: queries need BINLOG MONITOR (MariaDB) or REPLICATION CLIENT (MySQL).
func withGrantHint(err error, flavor string) error {
	switch serverErrno(err) {
	case errSpecificAccessDenied:
		return fmt.Errorf("%w (herald's user needs %s: GRANT %s ON *.* TO <herald's user>)",
			err, monitorGrant(flavor), monitorGrant(flavor))
	case errAccessDenied, errDBAccessDenied, errTableAccessDenied:
		return fmt.Errorf("%w (check the user and password of the DSN and the user's grants)", err)
	}
	return err
}
