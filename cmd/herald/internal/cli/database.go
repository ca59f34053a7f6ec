package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// The database flag: --database-url (HERALD_DATABASE_URL) is its name,
// --mysql-dsn (HERALD_MYSQL_DSN) the alias it had before PostgreSQL, kept
// for existing deployments. Both take either database: a postgres:// or
// postgresql:// URL is PostgreSQL, a mysql:// URL or anything else
// MySQL/MariaDB (package database decides, for the examples too).

// registerDatabase adds --database-url and its alias --mysql-dsn to cmd.
func (f *dbFlags) registerDatabase(cmd *cobra.Command, env envFlags) {
	cmd.Flags().Var(&givenString{p: &f.dsn, set: &f.urlGiven}, "database-url",
		"database: a postgres:// URL for PostgreSQL; for MySQL/MariaDB a mysql://user:password@host:3306/database URL "+
			"or the driver's DSN (default "+localstack.MySQLDSNDefault+")")
	cmd.Flags().Var(&givenString{p: &f.mysqlDSN, set: &f.mysqlGiven}, "mysql-dsn",
		"alias of --database-url, its name before PostgreSQL")
	env["database-url"] = "HERALD_DATABASE_URL"
	env["mysql-dsn"] = "HERALD_MYSQL_DSN"
}

// url returns the database the command line or the environment names (the
// local stack's MariaDB when neither does), checked without connecting and
// in its driver's form (a mysql:// URL converted, database.Normalize). A
// bad value, an empty one included (a script's unset variable must not
// reach the local default), is a usage error naming the flag it came
// from.
func (f *dbFlags) url() (string, error) {
	flag, dsn := "--database-url", f.dsn
	switch {
	case f.urlGiven && f.mysqlGiven && f.dsn != f.mysqlDSN:
		return "", usageError{fmt.Errorf("--database-url (HERALD_DATABASE_URL) and its alias --mysql-dsn (HERALD_MYSQL_DSN) name different databases: give one")}
	case f.mysqlGiven && !f.urlGiven:
		flag, dsn = "--mysql-dsn", f.mysqlDSN
	case !f.urlGiven:
		dsn = localstack.MySQLDSNDefault
	}
	if dsn == "" {
		return "", usageError{fmt.Errorf("%s: empty; name the database, or leave the flag (and its variable) out for the local stack's, %s",
			flag, localstack.MySQLDSNDefault)}
	}
	dsn, err := database.Normalize(dsn)
	if err == nil {
		err = database.Check(dsn, database.ConnOptions{})
	}
	if err != nil {
		return "", usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	return dsn, nil
}

// dialect is the dialect of the database url names (call url first).
func (f *dbFlags) dialect() store.Dialect {
	dsn, _ := f.url()
	return database.Dialect(dsn)
}

// givenString is a string flag that remembers whether it was given, on the
// command line or by its environment variable.
type givenString struct {
	p   *string
	set *bool
}

func (s *givenString) String() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// Set records v, given even when empty (url refuses an empty address).
func (s *givenString) Set(v string) error {
	*s.p, *s.set = v, true
	return nil
}

func (s *givenString) Type() string { return "string" }
