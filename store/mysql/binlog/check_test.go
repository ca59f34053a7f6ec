package binlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestCheckPasses: the local stack is set up for streaming.
func TestCheckPasses(t *testing.T) {
	e := newEnv(t)
	if err := binlog.Check(context.Background(), e.db.DB); err != nil {
		t.Fatal(err)
	}
}

// TestCheckWithoutOutbox names the missing table and the command that
// creates it.
func TestCheckWithoutOutbox(t *testing.T) {
	db := testenv.NewDatabase(t)
	err := binlog.Check(context.Background(), db.DB)
	var ce *binlog.CheckError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.Contains(err.Error(), "outbox_events does not exist") ||
		!strings.Contains(err.Error(), "herald migrate") {
		t.Fatalf("Check: %v", err)
	}
}

// TestCheckWithoutReplicationGrants: a user with every privilege on the
// outbox's database but no replication grant is told which grants to add,
// by Check and by Open.
func TestCheckWithoutReplicationGrants(t *testing.T) {
	const password = "s3cret-nogrant"
	e := newEnv(t)
	user := "herald_nogrant_" + e.db.Name[len(e.db.Name)-8:] // the database's random suffix
	testenv.MariaDBRoot(t,
		"CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY '"+password+"'",
		"GRANT ALL PRIVILEGES ON `"+e.db.Name+"`.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })

	cfg, err := driver.ParseDSN(e.db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, password
	db, err := mysql.Open(context.Background(), cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	err = binlog.Check(context.Background(), db)
	var ce *binlog.CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("Check: %v, want a *CheckError", err)
	}
	t.Log(err)
	if len(ce.Problems) != 3 {
		t.Errorf("%d problems, want 3 (REPLICATION SLAVE, BINLOG MONITOR, PROCESS)", len(ce.Problems))
	}
	for _, want := range []string{"REPLICATION SLAVE", "BINLOG MONITOR", "REPLICATION CLIENT", "GRANT REPLICATION SLAVE ON *.* TO '" + user + "'@'127.0.0.1'",
		"GRANT PROCESS ON *.* TO '" + user + "'@'127.0.0.1'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error does not name %s", want)
		}
	}

	// Open stops with the grant to add, too.
	rc := e.config()
	rc.DSN = cfg.FormatDSN()
	r, err := binlog.Open(context.Background(), db, rc, e.head(t))
	if err == nil {
		r.Close()
		t.Fatal("Open without replication grants succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "GRANT BINLOG MONITOR ON *.*") {
		t.Errorf("Open's error does not name BINLOG MONITOR")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("Open's error shows the password: %v", err)
	}
}

// TestCheckWithoutReplicationSlave: with BINLOG MONITOR but without
// REPLICATION SLAVE, Check names the one grant, and Open fails when the
// server refuses the stream, naming it too.
func TestCheckWithoutReplicationSlave(t *testing.T) {
	const password = "s3cret-noslave"
	e := newEnv(t)
	user := "herald_noslave_" + e.db.Name[len(e.db.Name)-8:]
	testenv.MariaDBRoot(t,
		"CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY '"+password+"'",
		"GRANT ALL PRIVILEGES ON `"+e.db.Name+"`.* TO '"+user+"'@'127.0.0.1'",
		"GRANT BINLOG MONITOR, PROCESS ON *.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { testenv.MariaDBRoot(t, "DROP USER IF EXISTS '"+user+"'@'127.0.0.1'") })
	cfg, err := driver.ParseDSN(e.db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, password
	db, err := mysql.Open(context.Background(), cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	err = binlog.Check(context.Background(), db)
	var ce *binlog.CheckError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || !strings.Contains(err.Error(), "lacks REPLICATION SLAVE") {
		t.Fatalf("Check: %v, want one problem naming REPLICATION SLAVE", err)
	}
	rc := e.config()
	rc.DSN = cfg.FormatDSN()
	r, err := binlog.Open(context.Background(), db, rc, e.head(t))
	if err == nil {
		r.Close()
		t.Fatal("Open without REPLICATION SLAVE succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "GRANT REPLICATION SLAVE ON *.*") || strings.Contains(err.Error(), password) {
		t.Errorf("Open's error does not name REPLICATION SLAVE, or shows the password: %v", err)
	}
}
