package database_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/store/mysql"
)

// TestConnOptionsEnvRoundTrip: what a drill hands a child process
// (ConnOptionsEnv) is what the child reads back (ConnOptionsFromEnv).
func TestConnOptionsEnvRoundTrip(t *testing.T) {
	o := mysql.ConnOptions{TLSMode: mysql.TLSVerifyCA, TLSCAFile: "/ca.pem", TLSCertFile: "/c.pem", TLSKeyFile: "/c.key",
		TLSServerName: "db.internal", Password: "s3cret"}
	env := database.ConnOptionsEnv(o)
	getenv := func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
	if got := database.ConnOptionsFromEnv(getenv); got != o {
		t.Errorf("ConnOptionsFromEnv(ConnOptionsEnv(%+v)) = %+v", o, got)
	}
}
