package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestMigrateUpNamesTheTriggerPrivilege: `herald migrate up` as an account
// without SUPER on a server with binary logging and
// log_bin_trust_function_creators off fails before it changes anything,
// naming the statements that fix it; after the fix the same command
// applies every migration.
func TestMigrateUpNamesTheTriggerPrivilege(t *testing.T) {
	srv := testenv.StartPrivateMariaDB(t)
	srv.Root(t, "CREATE DATABASE app", "CREATE USER 'app'@'localhost' IDENTIFIED BY 'app'",
		"GRANT ALL ON app.* TO 'app'@'localhost'")
	run := func(args ...string) (string, error) {
		t.Helper()
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(args, "--database-url", srv.DSN("app", "app", "app")))
		err := root.Execute()
		return out.String(), err
	}
	_, err := run("migrate", "up")
	if err == nil {
		t.Fatal("migrate up without the privilege succeeded")
	}
	for _, want := range []string{"nothing was applied", "SET GLOBAL log_bin_trust_function_creators = 1;", "GRANT SUPER ON *.* TO 'app'@'localhost';"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("migrate up said %q, which does not name %q", err, want)
		}
	}
	out, err := run("migrate", "status")
	if err != nil || !strings.Contains(out, "database version 0") {
		t.Errorf("migrate status after the refusal: %v\n%s", err, out)
	}

	srv.Root(t, "SET GLOBAL log_bin_trust_function_creators = 1")
	out, err = run("migrate", "up")
	if err != nil || !strings.Contains(out, "applied migration 6") {
		t.Errorf("migrate up with the variable set: %v\n%s", err, out)
	}
}
