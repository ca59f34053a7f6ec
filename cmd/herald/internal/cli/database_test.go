package cli

import (
	"net/url"
	"os"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDatabaseFlag: --database-url and its alias --mysql-dsn (and their
// variables) choose the database; both naming different ones is refused,
// a bad value names the flag it came from and never echoes a password.
func TestDatabaseFlag(t *testing.T) {
	const (
		pg    = "postgres://app:pw@db:5432/app"
		my    = "app:pw@tcp(db:3306)/app"
		other = "other:pw@tcp(db:3306)/other"
	)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // the address chosen
		wantErr string // or the error
	}{
		{"default is the local stack", nil, nil, localstack.MySQLDSNDefault, ""},
		{"--database-url with a postgres URL", []string{"--database-url=" + pg}, nil, pg, ""},
		{"--mysql-dsn alias", []string{"--mysql-dsn=" + my}, nil, my, ""},
		{"HERALD_DATABASE_URL", nil, map[string]string{"HERALD_DATABASE_URL": pg}, pg, ""},
		{"HERALD_MYSQL_DSN alias", nil, map[string]string{"HERALD_MYSQL_DSN": my}, my, ""},
		{"the flag beats its variable", []string{"--database-url=" + my}, map[string]string{"HERALD_DATABASE_URL": pg}, my, ""},
		{"both names, same value", []string{"--database-url=" + my, "--mysql-dsn=" + my}, nil, my, ""},
		{"both names, different databases", []string{"--database-url=" + my}, map[string]string{"HERALD_MYSQL_DSN": other}, "", "name different databases"},
		{"bad postgres URL names the flag", []string{"--database-url=postgres://app:hunter2@db:notaport/app"}, nil, "", "--database-url: postgres url: invalid port"},
		{"bad MySQL DSN names the alias", []string{"--mysql-dsn=app:hunter2@tcp(db:3306"}, nil, "", "--mysql-dsn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"HERALD_DATABASE_URL", "HERALD_MYSQL_DSN"} {
				t.Setenv(v, tt.env[v]) // restored after the test
				if tt.env[v] == "" {
					os.Unsetenv(v)
				}
			}
			var db dbFlags
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			env := envFlags{}
			db.register(cmd, env)
			env.bind(cmd)
			root := &cobra.Command{Use: "herald"}
			root.AddCommand(cmd)
			bindEnvironment(root)
			root.SetArgs(append([]string{"x"}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			got, err := db.url()
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("chose %q, err %v; want an error naming %q", got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q leaks the password", err)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Errorf("chose %q, want %q", got, tt.want)
			}
		})
	}
}

// dbCommandArgs are the arguments that take each command using the
// database past its other checks, to the database's address.
var dbCommandArgs = map[string][]string{
	"herald migrate up": nil, "herald migrate status": nil, "herald relay": nil, "herald cleanup": nil,
	"herald status": nil, "herald quarantine list": nil,
	"herald quarantine show":    {"0190d7a2-0000-7000-8000-000000000000"},
	"herald quarantine retry":   {"0190d7a2-0000-7000-8000-000000000000"},
	"herald quarantine discard": {"0190d7a2-0000-7000-8000-000000000000", "--reason=test"},
	"herald replay":             {"--from=1h", "--checkpoint=c"},
	"herald drill":              nil,
	"herald demo":               nil,
	"herald console":            nil,
	"herald stream setup":       nil,
	"herald stream status":      nil,
	"herald stream drop":        nil,
	"herald migrate unmap":      {"outbox"},
}

// TestDatabaseAddressRefusedUpFront: every command that takes
// --database-url (walked, so a new one is covered) refuses, with exit 2
// before connecting, an address naming no database (MySQL or PostgreSQL)
// and an empty one, given as the flag or its variable. Before, migrate
// status exited 0 with "version 0", migrate up failed with "No database
// selected", PostgreSQL used the user's database and an empty address the
// local default.
func TestDatabaseAddressRefusedUpFront(t *testing.T) {
	clearHeraldEnv(t)
	t.Setenv("PGDATABASE", "")
	t.Setenv("HERALD_KAFKA_BROKERS", "127.0.0.1:1") // a case that got through meets no broker
	var paths []string
	walk(newRootCommand(), func(cmd *cobra.Command) {
		if cmd.Flags().Lookup("database-url") != nil {
			paths = append(paths, cmd.CommandPath())
		}
	})
	if len(paths) != len(dbCommandArgs) {
		t.Errorf("commands with --database-url: %v; dbCommandArgs names %d (add the new one)", paths, len(dbCommandArgs))
	}
	bad := []struct {
		name string
		flag []string
		env  []string
		want string
	}{
		{"mysql dsn without a database", []string{"--database-url=herald:herald@tcp(127.0.0.1:3306)/"}, nil, "--database-url: mysql dsn names no database"},
		{"mysql url without a database", []string{"--mysql-dsn=mysql://herald:herald@127.0.0.1:3306/"}, nil, "--mysql-dsn: mysql dsn names no database"},
		{"postgres url without a database", []string{"--database-url=postgres://herald:herald@127.0.0.1:5432?sslmode=disable"}, nil,
			"--database-url: postgres url names no database"},
		{"empty --database-url", []string{"--database-url="}, nil, "--database-url: empty"},
		{"empty HERALD_DATABASE_URL", nil, []string{"HERALD_DATABASE_URL", ""}, "--database-url: empty"},
		{"empty --mysql-dsn", []string{"--mysql-dsn="}, nil, "--mysql-dsn: empty"},
	}
	for _, path := range paths {
		for _, tt := range bad {
			t.Run(path+"/"+tt.name, func(t *testing.T) {
				if tt.env != nil {
					t.Setenv(tt.env[0], tt.env[1])
				}
				args := append(append(strings.Fields(path)[1:], dbCommandArgs[path]...), tt.flag...)
				code, stdout, stderr := runMain(t, args...)
				if code != exitUsage || !strings.Contains(stderr, tt.want) {
					t.Errorf("herald %q: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", args, code, exitUsage, tt.want, stdout, stderr)
				}
			})
		}
	}
}

// TestMySQLURL: a mysql:// URL names a MySQL/MariaDB database like the
// driver's DSN: migrate up and status work with it. Before it failed
// with "default addr for network ... unknown".
func TestMySQLURL(t *testing.T) {
	clearHeraldEnv(t)
	d := testenv.NewDatabase(t)
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "mysql", User: url.UserPassword(cfg.User, cfg.Passwd), Host: cfg.Addr, Path: "/" + cfg.DBName}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "up"}, "applied migration 1\n"},
		{[]string{"migrate", "status"}, "database version"},
	} {
		args := c.args
		out, code := run(t, append(args, "--database-url="+u.String())...)
		if code != 0 || !strings.Contains(out, c.want) || strings.Contains(out, "database version 0") {
			t.Errorf("herald %v --database-url %s: exit %d\n%s", args, u.Redacted(), code, out)
		}
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'outbox_events'"); n != 1 {
		t.Errorf("migrate up through the mysql:// URL made no outbox_events in %s", d.Name)
	}
}
