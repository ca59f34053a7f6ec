package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PrivateMariaDB is a MariaDB server of one test's own, for settings the
// shared server must keep (a global variable other tests rely on): its data
// directory lives in the test's temporary directory, it listens on a socket
// only (no port to collide with), writes a binary log, and is killed when
// the test ends. Starting one takes about a second.
type PrivateMariaDB struct {
	// Socket is the server's Unix socket; root logs in over it without a
	// password.
	Socket string
}

// StartPrivateMariaDB initialises and starts a private server with the
// extra mariadbd arguments args (as "--log-bin-trust-function-creators=1")
// and waits until it answers.
func StartPrivateMariaDB(t testing.TB, args ...string) *PrivateMariaDB {
	t.Helper()
	server, err := exec.LookPath("mariadbd")
	if err != nil {
		server = "/usr/sbin/mariadbd" // root's PATH has it, a user's may not
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// --user=root: the test runs as root and owns its temporary
	// directory; the stack's own server runs as mysql.
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=socket", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	m := &PrivateMariaDB{Socket: filepath.Join(dir, "mariadb.sock")}
	p := StartProcess(t, ProcessOptions{Name: "private-mariadbd", Path: server, Args: append([]string{
		"--no-defaults", "--datadir=" + data, "--user=root", "--socket=" + m.Socket,
		"--pid-file=" + filepath.Join(dir, "mariadb.pid"), "--skip-networking",
		"--log-bin=" + filepath.Join(dir, "binlog"), "--server-id=1", "--binlog-format=ROW",
		"--innodb-buffer-pool-size=16M", "--character-set-server=utf8mb4", "--default-time-zone=+00:00",
	}, args...)})
	WaitFor(t, 30*time.Second, "the private MariaDB answering on "+m.Socket, func() (bool, string) {
		if p.Exited() {
			t.Fatalf("mariadbd exited (%v):\n%s", p.Exit(), p.Tail(20))
		}
		if _, err := os.Stat(m.Socket); err != nil {
			return false, err.Error()
		}
		if err := m.root("SELECT 1"); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return m
}

// Root runs statements as the server's root and fails t if one fails.
func (m *PrivateMariaDB) Root(t testing.TB, statements ...string) {
	t.Helper()
	if err := m.root(statements...); err != nil {
		t.Fatal(err)
	}
}

func (m *PrivateMariaDB) root(statements ...string) error {
	out, err := exec.Command("mariadb", "--socket="+m.Socket, "-uroot", "-e", strings.Join(statements, ";\n")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("private MariaDB root: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// DSN is a go-sql-driver DSN of user and password over the socket, on
// database.
func (m *PrivateMariaDB) DSN(user, password, database string) string {
	return fmt.Sprintf("%s:%s@unix(%s)/%s", user, password, m.Socket, database)
}
