package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/pressly/goose/v3"
)

// ErrTriggerPrivilege is returned by Set.Up, before it applies anything, when
// a pending migration creates a trigger that the server would refuse:
// MySQL and MariaDB with binary logging on refuse CREATE TRIGGER (ERROR 1419)
// to an account without SUPER unless log_bin_trust_function_creators is set.
// The error's text names the statements that fix it.
var ErrTriggerPrivilege = errors.New("this account may not create the outbox's trigger on a server with binary logging")

// triggerServer is what decides whether a MySQL server lets the migrating
// account create triggers, as read from it.
type triggerServer struct {
	// logBin and trustCreators are @@GLOBAL.log_bin and
	// @@GLOBAL.log_bin_trust_function_creators.
	logBin, trustCreators bool
	// super says whether the account holds SUPER (or ALL PRIVILEGES) on *.*.
	super bool
	// account is CURRENT_USER() as GRANT names it: 'user'@'host'.
	account string
}

// refusesTriggers reports whether the server answers CREATE TRIGGER with
// ERROR 1419: only with the binary log on, the variable off and no SUPER.
func (s triggerServer) refusesTriggers() bool {
	return s.logBin && !s.trustCreators && !s.super
}

// checkPrivileges returns an error wrapping ErrTriggerPrivilege when a
// pending migration of s creates a trigger and db would refuse it. It
// writes nothing.
func (s Set) checkPrivileges(ctx context.Context, db *sql.DB, kind string, p *goose.Provider) error {
	if kind != serverMySQL {
		return nil // PostgreSQL: the table's owner may create its triggers
	}
	versions, err := s.pendingTriggers(ctx, db, kind, p)
	if err != nil || len(versions) == 0 {
		return err
	}
	srv, err := readTriggerServer(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate %s: check the privilege to create triggers: %w", s.Name, err)
	}
	if !srv.refusesTriggers() {
		return nil
	}
	return fmt.Errorf("migrate %s: %w: nothing was applied.\n"+
		"Migration %s creates a trigger on outbox_events (the SQL contract, docs/writers.md). This server writes a binary\n"+
		"log (log_bin=ON) and has log_bin_trust_function_creators=OFF, so it refuses CREATE TRIGGER (ERROR 1419) to %s,\n"+
		"which has no SUPER privilege. Do one of these, as an administrator, then run `herald migrate up` again:\n"+
		"  SET GLOBAL log_bin_trust_function_creators = 1;\n"+
		"      and, so that a restart keeps it, log_bin_trust_function_creators = 1 under [mysqld] in the server's\n"+
		"      configuration (on a managed server: its parameter group)\n"+
		"  GRANT SUPER ON *.* TO %s;\n"+
		"docs/security.md lists the privileges herald needs",
		s.Name, ErrTriggerPrivilege, joinVersions(versions), srv.account, srv.account)
}

// createTrigger finds a CREATE TRIGGER statement in a migration's text.
var createTrigger = regexp.MustCompile(`(?i)\bCREATE\s+(DEFINER\s*=\s*\S+\s+)?TRIGGER\b`)

// pendingTriggers returns the versions of the pending migrations of s that
// create a trigger. Pending means newer than the database's version, or
// every migration while goose's version table does not exist yet (reading
// the version creates the table: not before the check).
func (s Set) pendingTriggers(ctx context.Context, db *sql.DB, kind string, p *goose.Provider) ([]int64, error) {
	var current int64
	exists, err := tableExists(ctx, db, kind, s.Table)
	if err != nil {
		return nil, fmt.Errorf("read %s schema version: %w", s.Name, err)
	}
	if exists {
		if current, err = p.GetDBVersion(ctx); err != nil {
			return nil, fmt.Errorf("read %s schema version: %w", s.Name, err)
		}
	}
	var versions []int64
	for _, src := range p.ListSources() {
		if src.Version <= current {
			continue
		}
		text, err := fs.ReadFile(s.FS, src.Path)
		if err != nil {
			return nil, fmt.Errorf("read %s migration %d: %w", s.Name, src.Version, err)
		}
		if createTrigger.Match(upSection(text)) {
			versions = append(versions, src.Version)
		}
	}
	return versions, nil
}

// upSection is the part of a goose migration that applies it (its Down
// drops what Up created).
func upSection(text []byte) []byte {
	if i := strings.Index(string(text), "-- +goose Down"); i >= 0 {
		return text[:i]
	}
	return text
}

// readTriggerServer reads the variables and the account's global grants.
func readTriggerServer(ctx context.Context, db *sql.DB) (triggerServer, error) {
	var srv triggerServer
	var user string
	if err := db.QueryRowContext(ctx,
		"SELECT @@GLOBAL.log_bin, @@GLOBAL.log_bin_trust_function_creators, CURRENT_USER()").
		Scan(&srv.logBin, &srv.trustCreators, &user); err != nil {
		return srv, err
	}
	name, host, _ := strings.Cut(user, "@")
	srv.account = "'" + name + "'@'" + host + "'"
	// SHOW GRANTS names the current account's grants and its active
	// roles' (a role's SUPER counts too).
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return srv, err
	}
	defer rows.Close()
	for rows.Next() {
		var grant string
		if err := rows.Scan(&grant); err != nil {
			return srv, err
		}
		if globalSuper(grant) {
			srv.super = true
		}
	}
	return srv, rows.Err()
}

// globalGrant matches a GRANT of privileges on *.*.
var globalGrant = regexp.MustCompile(`(?i)^GRANT\s+(.+?)\s+ON\s+\*\.\*\s+TO\s`)

// globalSuper reports whether one line of SHOW GRANTS gives SUPER (or
// ALL PRIVILEGES) on every database.
func globalSuper(grant string) bool {
	m := globalGrant.FindStringSubmatch(grant)
	if m == nil {
		return false
	}
	for _, priv := range strings.Split(m[1], ",") {
		switch strings.ToUpper(strings.TrimSpace(priv)) {
		case "SUPER", "ALL", "ALL PRIVILEGES":
			return true
		}
	}
	return false
}

func joinVersions(vs []int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
