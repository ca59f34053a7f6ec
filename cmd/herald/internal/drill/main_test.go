package drill_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}

// binDir builds herald and the three example services once per test
// process (as `make build` does into bin/) and returns their directory.
func binDir(t *testing.T) string {
	t.Helper()
	var dir string
	for _, pkg := range []string{"./cmd/herald", "./cmd/herald/internal/drill/services/orders", "./cmd/herald/internal/drill/services/inventory", "./examples/warehouse"} {
		dir = filepath.Dir(testenv.Binary(t, pkg))
	}
	return dir
}
