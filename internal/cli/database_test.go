package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/internal/localstack"
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
