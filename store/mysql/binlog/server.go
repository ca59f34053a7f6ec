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
// it returns exactly the transactions committed after it. Every
// transaction before it is committed in the storage engine, so a read
// started after Head returns sees its rows: a sweep of the outbox that
// starts after Head and a stream from Head miss nothing between them.
//
// On MariaDB the position comes from a consistent snapshot
// (Binlog_snapshot_file/position, which InnoDB's commits agree with, since
// a transaction reaches the binlog a moment before its engine commit) as a
// GTID position (BINLOG_GTID_POS), or a file position before the binlog
// holds any GTID. On MySQL it is @@gtid_executed with gtid_mode=ON (a
// transaction enters it after its engine commit), else the binlog's file
// and offset. It needs BINLOG MONITOR (MariaDB) or REPLICATION CLIENT
// (MySQL) for file positions.
func Head(ctx context.Context, db *sql.DB) (Position, error) {
	flavor, err := flavorOf(ctx, db)
	if err != nil {
		return Position{}, fmt.Errorf("binlog head: %w", err)
	}
	if flavor == gomysql.MariaDBFlavor {
		p, err := mariadbHead(ctx, db)
		if err != nil {
			return Position{}, fmt.Errorf("binlog head: %w", err)
		}
		return p, nil
	}
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
	file, offset, err := binlogStatus(ctx, db, flavor)
	if err != nil {
		return Position{}, fmt.Errorf("binlog head: %w", err)
	}
	return Position{kind: kindFile, file: file, offset: offset}, nil
}

// mariadbHead reads MariaDB's binlog position of a consistent snapshot and
// its GTID position.
func mariadbHead(ctx context.Context, db *sql.DB) (Position, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return Position{}, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return Position{}, fmt.Errorf("start a consistent snapshot: %w", err)
	}
	var file string
	var offset uint32
	rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err == nil {
		for rows.Next() {
			var name, value string
			if err = rows.Scan(&name, &value); err != nil {
				break
			}
			switch strings.ToLower(name) {
			case "binlog_snapshot_file":
				file = value
			case "binlog_snapshot_position":
				var n uint64
				n, err = strconv.ParseUint(value, 10, 32)
				offset = uint32(n)
			}
			if err != nil {
				break
			}
		}
		rows.Close()
		err = errors.Join(err, rows.Err())
	}
	if _, cerr := conn.ExecContext(ctx, "COMMIT"); err == nil {
		err = cerr
	}
	if err != nil {
		return Position{}, fmt.Errorf("read the snapshot's binlog position: %w", err)
	}
	if file == "" {
		return Position{}, errors.New("the server reports no binlog position: binary logging is off (log_bin)")
	}
	var gtids sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, offset).Scan(&gtids); err != nil {
		return Position{}, fmt.Errorf("BINLOG_GTID_POS(%s, %d): %w", file, offset, err)
	}
	// Empty until the binlog holds a transaction: then only the file
	// position says where "now" is.
	if strings.TrimSpace(gtids.String) == "" {
		return Position{kind: kindFile, file: file, offset: offset}, nil
	}
	st, err := parseMariaDBGTIDs(gtids.String)
	if err != nil {
		return Position{}, fmt.Errorf("BINLOG_GTID_POS(%s, %d): %w", file, offset, err)
	}
	return Position{kind: kindMariaDB, gtid: st.String()}, nil
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
