package drill_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

var built struct {
	once sync.Once
	dir  string
	err  error
}

// binDir builds herald and the three example services once per test
// process (as `make build` does into bin/) and returns their directory.
func binDir(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "herald-drill-bin-"); built.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", built.dir+"/",
			"github.com/herald-outbox/herald/cmd/herald", "github.com/herald-outbox/herald/examples/orders",
			"github.com/herald-outbox/herald/examples/inventory", "github.com/herald-outbox/herald/examples/warehouse")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out.String())
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}
