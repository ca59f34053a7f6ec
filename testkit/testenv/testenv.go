package testenv

import (
	"testing"
)

// requireServer fails t (or skips it under -short) because server is not
// reachable.
func requireServer(t testing.TB, server string, err error) {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipped under -short: %s is not reachable (%v); run `make up`", server, err)
	}
	t.Fatalf("%s is not reachable: %v\nrun `make up` (or set HERALD_MYSQL_DSN / HERALD_KAFKA_BROKERS)", server, err)
}

// uniqueName returns prefix plus a sanitized form of the test's name plus a
// random suffix, at most max characters, safe as a database or topic name.
func uniqueName(t testing.TB, prefix string, max int) string {
	t.Helper()
	var b []byte
	for _, r := range []byte(t.Name()) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b = append(b, r)
		case r >= 'A' && r <= 'Z':
			b = append(b, r+'a'-'A')
		default:
			b = append(b, '_')
		}
	}
	suffix := "_" + randomSuffix()
	room := max - len(prefix) - len(suffix)
	if len(b) > room {
		b = b[:room]
	}
	return prefix + string(b) + suffix
}
