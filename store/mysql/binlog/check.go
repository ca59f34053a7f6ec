package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// CheckError is Check's verdict: every problem that stops the server's
// binlog from being streamed, each naming the setting or grant to fix.
type CheckError struct {
	// Problems are the problems found, one sentence each.
	Problems []string
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("binlog source not ready (%d problem(s)): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// Check verifies, on a connection of herald's user to the outbox's
// database, everything streaming needs: binary logging on, binlog_format
// ROW, binlog_row_image FULL, binlog_row_metadata FULL (rows are decoded by
// column name, so an added column does not break decoding), the grants
// REPLICATION SLAVE and BINLOG MONITOR (MariaDB) or REPLICATION CLIENT
// (MySQL), PROCESS (the watermark reads the open transactions), and the
// table outbox_events. It returns nil or one *CheckError
// listing every problem; another error means the server could not be asked.
func Check(ctx context.Context, db *sql.DB) error {
	s, err := readServer(ctx, db)
	if err != nil {
		return fmt.Errorf("binlog check: %w", err)
	}
	if problems := judge(s); len(problems) > 0 {
		return &CheckError{Problems: problems}
	}
	return nil
}

// checkedVariables are the server variables judge looks at.
var checkedVariables = []string{"log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata"}

// serverFacts is what Check reads from the server: judge decides on it
// alone, so its verdicts are tested without a server.
type serverFacts struct {
	flavor string
	// user is CURRENT_USER() quoted for a GRANT statement ('herald'@'%').
	user string
	// variables holds checkedVariables the server has (lower-case names).
	variables map[string]string
	// grants are the lines of SHOW GRANTS.
	grants []string
	// monitorErr is the error of SHOW BINARY LOGS (nil: allowed), and
	// processErr that of reading information_schema.innodb_trx.
	monitorErr error
	processErr error
	// database is the connection's database ("" for none).
	database string
	// outbox says whether database has a table outbox_events.
	outbox bool
}

func readServer(ctx context.Context, db *sql.DB) (serverFacts, error) {
	var s serverFacts
	var err error
	if s.flavor, err = flavorOf(ctx, db); err != nil {
		return s, err
	}
	var user string
	var database sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER(), DATABASE()").Scan(&user, &database); err != nil {
		return s, fmt.Errorf("read current user: %w", err)
	}
	s.user, s.database = quoteAccount(user), database.String

	s.variables = map[string]string{}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('"+strings.Join(checkedVariables, "', '")+"')")
	if err != nil {
		return s, fmt.Errorf("read server variables: %w", err)
	}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			rows.Close()
			return s, fmt.Errorf("read server variables: %w", err)
		}
		s.variables[strings.ToLower(name)] = value
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read server variables: %w", err)
	}

	if s.grants, err = queryStrings(ctx, db, "SHOW GRANTS"); err != nil {
		return s, fmt.Errorf("read grants: %w", err)
	}
	// Probing beats parsing grants here: a role or SUPER may carry the
	// privilege, and the probe answers for all of them.
	_, s.monitorErr = queryStrings(ctx, db, "SHOW BINARY LOGS")
	_, s.processErr = queryStrings(ctx, db, "SELECT COUNT(*) FROM information_schema.innodb_trx")
	if s.database != "" {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'outbox_events'`).Scan(&n); err != nil {
			return s, fmt.Errorf("look for outbox_events: %w", err)
		}
		s.outbox = n > 0
	}
	return s, nil
}

// queryStrings returns the first column of q's rows.
func queryStrings(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		raw := make([]sql.RawBytes, len(cols))
		dest := make([]any, len(cols))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, string(raw[0]))
	}
	return out, rows.Err()
}

// quoteAccount turns CURRENT_USER()'s user@host into 'user'@'host'.
func quoteAccount(account string) string {
	i := strings.LastIndexByte(account, '@')
	if i < 0 {
		return "'" + account + "'"
	}
	return "'" + account[:i] + "'@'" + account[i+1:] + "'"
}

// judge lists what stops s from being streamed, each problem with its fix.
func judge(s serverFacts) []string {
	var problems []string
	fix := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	v := func(name string) (string, bool) {
		value, ok := s.variables[name]
		return strings.ToUpper(strings.TrimSpace(value)), ok
	}
	configFile := "the server's configuration file ([mariadbd] section)"
	if s.flavor != gomysql.MariaDBFlavor {
		configFile = "the server's configuration file ([mysqld] section)"
	}

	logBin, _ := v("log_bin")
	binlogOn := logBin == "ON" || logBin == "1"
	if !binlogOn {
		fix("binary logging is off (log_bin=%s): set log_bin=<base name> in %s and restart the server", orNone(logBin), configFile)
	}
	want := func(name, value, why string) {
		got, ok := v(name)
		switch {
		case !ok:
			fix("%s is unknown to this server (MariaDB 10.5+ or MySQL 8.0.1+ have it): %s needs it set to %s", name, why, value)
		case got != value:
			fix("%s is %s, want %s (%s): SET GLOBAL %s=%s and put %s=%s in %s (sessions already open keep the old value)",
				name, orNone(got), value, why, name, value, name, value, configFile)
		}
	}
	want("binlog_format", "ROW", "the reader decodes row events, not statements")
	want("binlog_row_image", "FULL", "an insert's row event must carry every column")
	want("binlog_row_metadata", "FULL", "rows are decoded by column name, so a migration that adds a column does not break decoding")

	global := globalPrivileges(s.grants)
	if !global["REPLICATION SLAVE"] && !global["ALL PRIVILEGES"] && !hasRoleGrant(s.grants) {
		fix("herald's user %s lacks REPLICATION SLAVE (it streams the binlog): GRANT REPLICATION SLAVE ON *.* TO %s", s.user, s.user)
	}
	switch errno := serverErrno(s.monitorErr); {
	case s.monitorErr == nil, errno == errNoBinaryLogging && !binlogOn:
	case errno == errSpecificAccessDenied:
		grant := monitorGrant(s.flavor)
		also := ""
		if s.flavor == gomysql.MariaDBFlavor {
			also = ", called REPLICATION CLIENT before MariaDB 10.5"
		}
		fix("herald's user %s lacks %s (it reads the binlog's head and files%s): GRANT %s ON *.* TO %s", s.user, grant, also, grant, s.user)
	default:
		fix("SHOW BINARY LOGS failed: %v", s.monitorErr)
	}

	switch errno := serverErrno(s.processErr); {
	case s.processErr == nil:
	case errno == errSpecificAccessDenied:
		fix("herald's user %s lacks PROCESS (the stream's watermark reads the open transactions in "+
			"information_schema.innodb_trx; docs/design.md, section 9.3): GRANT PROCESS ON *.* TO %s", s.user, s.user)
	default:
		fix("reading information_schema.innodb_trx failed: %v", s.processErr)
	}

	switch {
	case s.database == "":
		fix("the connection has no database: name the outbox's database in the DSN")
	case !s.outbox:
		fix("table outbox_events does not exist in database %s: run `herald migrate` on it", s.database)
	}
	return problems
}

func orNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// globalGrant matches a SHOW GRANTS line granting privileges on *.*.
var globalGrant = regexp.MustCompile(`(?i)^GRANT (.+?) ON \*\.\* TO `)

// roleGrant matches a SHOW GRANTS line granting a role ("GRANT `r` TO u").
var roleGrant = regexp.MustCompile("(?i)^GRANT [`'\"]?[^ ]+[`'\"]?(@[^ ]+)? TO ")

// globalPrivileges returns the privileges granted on *.* (upper case).
func globalPrivileges(grants []string) map[string]bool {
	privs := map[string]bool{}
	for _, g := range grants {
		m := globalGrant.FindStringSubmatch(g)
		if m == nil {
			continue
		}
		for _, p := range strings.Split(m[1], ",") {
			privs[strings.ToUpper(strings.TrimSpace(p))] = true
		}
	}
	return privs
}

// hasRoleGrant reports whether a role is granted: its privileges are not in
// the user's own lines, so a missing privilege cannot be concluded (Open
// names the grant if the server refuses the stream).
func hasRoleGrant(grants []string) bool {
	for _, g := range grants {
		if !strings.Contains(strings.ToUpper(g), " ON ") && roleGrant.MatchString(g) {
			return true
		}
	}
	return false
}
