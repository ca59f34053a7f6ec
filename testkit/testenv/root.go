package testenv

import (
	"testing"

	"github.com/herald-outbox/herald/testkit/localstack"
)

// MariaDBRoot runs statements as MariaDB's root over the stack's socket
// (localstack.MariaDBRoot). Without that access the test fails, or under
// -short is skipped.
func MariaDBRoot(t testing.TB, statements ...string) {
	t.Helper()
	if err := localstack.MariaDBRoot(statements...); err != nil {
		if testing.Short() {
			t.Skipf("skipped under -short: this test needs %v", err)
		}
		t.Fatal(err)
	}
}
