package testenv

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// MariaDBSocket is the local stack's MariaDB socket, where root logs in
// without a password.
const MariaDBSocket = "/var/tmp/herald-stack/mariadb/mariadb.sock"

// MariaDBRoot runs statements as MariaDB's root over the stack's socket
// (herald's user may not create users, rotate or purge binlogs). Without
// that access the test fails, or under -short is skipped.
func MariaDBRoot(t testing.TB, statements ...string) {
	t.Helper()
	out, err := exec.Command("mariadb", "--socket="+MariaDBSocket, "-uroot", "-e", strings.Join(statements, ";\n")).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("MariaDB root over %s: %v: %s", MariaDBSocket, err, strings.TrimSpace(string(out)))
		if testing.Short() {
			t.Skipf("skipped under -short: this test needs %s", msg)
		}
		t.Fatal(msg)
	}
}
