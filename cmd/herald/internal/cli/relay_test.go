package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRelayRefusesExplicitInvalidValues: a relay setting whose library
// field reads 0 as "the default" is refused when given as 0 (on the command
// line or in its variable), naming the flag (and the variable), as is a
// negative --cleanup-retention; each case was accepted before. All problems
// are reported at once, before any connection (the DSN points nowhere).
func TestRelayRefusesExplicitInvalidValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"lease 0", []string{"--lease=0"}, nil, []string{"--lease: must not be 0s", "8s"}},
		{"batch size 0", []string{"--batch-size=0"}, nil, []string{"--batch-size: must not be 0", "500"}},
		{"max attempts 0", []string{"--max-attempts=0"}, nil, []string{"--max-attempts: must not be 0", "25"}},
		{"poll interval 0", []string{"--poll-interval=0s"}, nil, []string{"--poll-interval: must not be 0s", "50ms"}},
		{"poll interval 0 from the environment", nil, map[string]string{"HERALD_POLL_INTERVAL": "0"},
			[]string{"HERALD_POLL_INTERVAL (for --poll-interval): must not be 0s"}},
		{"backoff base 0", []string{"--backoff-base=0"}, nil, []string{"--backoff-base: must not be 0s"}},
		{"backoff cap 0", []string{"--backoff-cap=0"}, nil, []string{"--backoff-cap: must not be 0s"}},
		{"shutdown timeout 0", []string{"--shutdown-timeout=0"}, nil, []string{"--shutdown-timeout: must not be 0s"}},
		{"empty order policy", []string{"--order-policy="}, nil, []string{"--order-policy: must not be empty", "hold"}},
		{"cleanup interval 0", []string{"--cleanup-retention=168h", "--cleanup-interval=0"}, nil,
			[]string{"--cleanup-interval: must not be 0s"}},
		{"backlog interval 0", []string{"--backlog-interval=0"}, nil, []string{"--backlog-interval: must not be 0s"}},
		{"negative cleanup retention", []string{"--cleanup-retention=-1h"}, nil,
			[]string{"--cleanup-retention: must not be negative", "-1h"}},
		{"negative cleanup retention from the environment", nil, map[string]string{"HERALD_CLEANUP_RETENTION": "-1h"},
			[]string{"--cleanup-retention: must not be negative"}},
		{"inbox retention without cleanup", []string{"--cleanup-inbox-retention=336h"}, nil,
			[]string{"--cleanup-inbox-retention: needs"}},
		{"inbox retention not above the retention", []string{"--cleanup-retention=168h", "--cleanup-inbox-retention=24h"}, nil,
			[]string{"--cleanup-inbox-retention: must be longer"}},
		{"binlog source on PostgreSQL", []string{"--source=binlog", "--mysql-dsn=postgres://u:p@127.0.0.1:1/db"}, nil,
			[]string{"--source binlog", "on PostgreSQL use --source wal"}},
		{"wal source on MariaDB", []string{"--source=wal"}, nil,
			[]string{"--source wal", "streams PostgreSQL's WAL", "on MariaDB/MySQL use --source binlog"}},
		{"slot without the wal source", []string{"--slot=herald_x", "--mysql-dsn=postgres://u:p@127.0.0.1:1/db"}, nil,
			[]string{"--slot: only --source wal"}},
		{"unknown source", []string{"--source=debezium"}, nil, []string{"--source: want poll, binlog or wal"}},
		{"every problem at once", []string{"--lease=0", "--batch-size=0", "--cleanup-retention=-1h", "--compression=brotli"}, nil,
			[]string{"--lease", "--batch-size", "--cleanup-retention", "--compression"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearHeraldEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			err := runRelayCommand(t, tt.args...)
			var usage usageError
			if !errors.As(err, &usage) {
				t.Fatalf("error %v, want a usage error (exit 2)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestRelayAcceptsMeaningfulZeros: where 0 or empty means something
// (cleanup off, no linger, no default topic, a generated relay id), it is
// accepted: the command gets past its checks to the database, which is not
// there.
func TestRelayAcceptsMeaningfulZeros(t *testing.T) {
	clearHeraldEnv(t)
	err := runRelayCommand(t, "--cleanup-retention=0", "--cleanup-inbox-retention=0", "--linger=0",
		"--default-topic=", "--relay-id=")
	var usage usageError
	if err == nil || errors.As(err, &usage) {
		t.Fatalf("error %v, want a connection error past the checks", err)
	}
}

// runRelayCommand runs `herald relay` in-process against a database that
// is not there, so a command that passed its checks fails fast.
func runRelayCommand(t *testing.T, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root := newRootCommand()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"relay", "--mysql-dsn=herald:herald@tcp(127.0.0.1:1)/nowhere?timeout=2s",
		"--kafka-brokers=127.0.0.1:1"}, args...))
	return root.ExecuteContext(ctx)
}

// clearHeraldEnv unsets the HERALD_* variables of the test's environment
// for the rest of t, so only the test's own values reach the command.
func clearHeraldEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "HERALD_") {
			t.Setenv(name, "") // restored when t ends
			os.Unsetenv(name)
		}
	}
}

// TestRelayHelpNamesWALRequirements: herald relay --help says what
// --source wal needs of PostgreSQL and of herald's role (what
// store/postgres/wal.Check checks) and where the setup is documented.
func TestRelayHelpNamesWALRequirements(t *testing.T) {
	code, stdout, stderr := runMain(t, "relay", "--help")
	if code != 0 {
		t.Fatalf("relay --help: exit %d\n%s", code, stderr)
	}
	help := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"--source wal", "wal_level = logical", "max_replication_slots", "REPLICATION attribute",
		"herald stream setup", "--slot", "docs/postgres-stream.md"} {
		if !strings.Contains(help, want) {
			t.Errorf("relay --help does not name %q", want)
		}
	}
}

// TestRelayHelpNamesBinlogRequirements: herald relay --help says what
// --source binlog needs of the server and of herald's user (what
// store/mysql/binlog.Check checks) and where the design is, as the README
// promises; before, it named none of them.
func TestRelayHelpNamesBinlogRequirements(t *testing.T) {
	code, stdout, stderr := runMain(t, "relay", "--help")
	if code != 0 {
		t.Fatalf("relay --help: exit %d\n%s", code, stderr)
	}
	help := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"log_bin", "binlog_format=ROW", "binlog_row_image=FULL", "binlog_row_metadata=FULL",
		"REPLICATION SLAVE", "BINLOG MONITOR", "REPLICATION CLIENT", "docs/design.md, section 9"} {
		if !strings.Contains(help, want) {
			t.Errorf("relay --help does not name %q", want)
		}
	}
}
