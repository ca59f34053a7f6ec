package binlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/changestream"
)

func TestParsePosition(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"mariadb-gtid:0-1-236421", "mariadb-gtid:0-1-236421"},
		{"mariadb-gtid:2-5-7,0-1-9", "mariadb-gtid:0-1-9,2-5-7"}, // domains sorted
		{" mariadb-gtid: 1-1-1 , 0-2-3 ", "mariadb-gtid:0-2-3,1-1-1"},
		{"mysql-gtid:3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7", "mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7"},
		{"mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2",
			"mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2"},
		{"mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:tag_1:1-3", "mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:tag_1:1-3"},
		{"file:mariadb-bin.000013:27137709", "file:mariadb-bin.000013:27137709"},
		{"file:odd:name.000001:4", "file:odd:name.000001:4"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ParsePosition(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != tc.want {
				t.Fatalf("String() = %q, want %q", p.String(), tc.want)
			}
			again, err := ParsePosition(p.String())
			if err != nil || again != p {
				t.Fatalf("round trip: %v, %v", again, err)
			}
		})
	}
}

func TestParsePositionRejects(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"", "want mariadb-gtid:"},
		{"0-1-5", "want mariadb-gtid:"},
		{"mariadb-gtid:", "empty GTID position"},
		{"mariadb-gtid:0-1", "domain-server-sequence"},
		{"mariadb-gtid:0-1-x", "unsigned numbers"},
		{"mariadb-gtid:0-1-5,0-2-6", "domain 0 appears twice"},
		{"mysql-gtid:", "empty GTID set"},
		{"mysql-gtid:not-a-uuid:1-5", "MySQL GTID set"},
		{"mysql-gtid:00000000-0000-0000-0000-000000000000:1", "nil server uuid"},
		{"file:mariadb-bin.000001", "file:<binlog file>:<offset>"},
		{"file::4", "file:<binlog file>:<offset>"},
		{"file:mariadb-bin.000001:-1", "not a number"},
		{"file:mariadb-bin.000001:3", "at least 4"},
		{"file:mariadb-bin.000001:99999999999", "not a number"},
		{"file:../etc/passwd:4", "not a bare file name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParsePosition(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v: want one saying %q", err, tc.says)
			}
		})
	}
}

func TestPositionZero(t *testing.T) {
	var p Position
	if !p.IsZero() || p.String() != "" || p.IsGTID() {
		t.Fatalf("zero position: %q", p)
	}
}

func TestMariaDBStateAdd(t *testing.T) {
	st, err := parseMariaDBGTIDs("1-1-10")
	if err != nil {
		t.Fatal(err)
	}
	st.add(mariadbGTID{domain: 0, server: 2, seq: 5})
	st.add(mariadbGTID{domain: 1, server: 3, seq: 11}) // a fail-over in domain 1: the new server's GTID replaces
	if got := st.String(); got != "0-2-5,1-3-11" {
		t.Fatalf("state %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	dsn := "herald:secret@tcp(127.0.0.1:3306)/herald_db"
	for _, tc := range []struct {
		name   string
		cfg    Config
		fields []string
	}{
		{"defaults", Config{DSN: dsn}, nil},
		{"no DSN", Config{}, []string{"DSN"}},
		{"no database", Config{DSN: "herald:secret@tcp(127.0.0.1:3306)/"}, []string{"DSN"}},
		{"bad DSN", Config{DSN: "herald:secret@nonsense"}, []string{"DSN"}},
		// The settings every reader takes are checked first (changestream.Config), then the binlog's own.
		{"negatives", Config{DSN: dsn, ReadTimeout: -1, Config: changestream.Config{HeartbeatPeriod: -1, Timeout: -1,
			ReconnectBackoffBase: -1, ReconnectBackoffCap: -1, LagInterval: -1}},
			[]string{"HeartbeatPeriod", "Timeout", "ReconnectBackoffBase", "ReconnectBackoffCap", "LagInterval", "ReadTimeout"}},
		{"tiny heartbeat", Config{DSN: dsn, Config: changestream.Config{HeartbeatPeriod: time.Microsecond}}, []string{"HeartbeatPeriod"}},
		{"read timeout under heartbeat", Config{DSN: dsn, ReadTimeout: 5 * time.Second,
			Config: changestream.Config{HeartbeatPeriod: 5 * time.Second}}, []string{"ReadTimeout"}},
		{"long heartbeat stretches the default read timeout", Config{DSN: dsn, Config: changestream.Config{HeartbeatPeriod: time.Minute}}, nil},
		{"cap under base", Config{DSN: dsn, Config: changestream.Config{ReconnectBackoffBase: time.Second,
			ReconnectBackoffCap: time.Millisecond}}, []string{"ReconnectBackoffCap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			var got []string
			for err := range leaves(err) {
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("%v is not a *ConfigError", err)
				}
				got = append(got, ce.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("invalid fields %v, want %v (%v)", got, tc.fields, err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// leaves yields the errors joined inside err.
func leaves(err error) func(func(error) bool) {
	return func(yield func(error) bool) {
		if err == nil {
			return
		}
		if j, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !yield(e) {
					return
				}
			}
			return
		}
		yield(err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{DSN: "u:p@tcp(h:1)/d"}.withDefaults()
	if c.ServerID < ServerIDMin || c.HeartbeatPeriod != changestream.HeartbeatPeriodDefault || c.ReadTimeout != ReadTimeoutDefault ||
		c.Timeout != changestream.TimeoutDefault || c.ReconnectBackoffBase != changestream.ReconnectBackoffBaseDefault ||
		c.ReconnectBackoffCap != changestream.ReconnectBackoffCapDefault || c.LagInterval != changestream.LagIntervalDefault || c.Logger == nil {
		t.Fatalf("defaults: %+v", c)
	}
}

// facts is a server ready to stream; cases change one thing each.
func facts(change func(*serverFacts)) serverFacts {
	s := serverFacts{
		flavor: gomysql.MariaDBFlavor,
		user:   "'herald'@'%'",
		variables: map[string]string{"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL",
			"binlog_row_metadata": "FULL"},
		grants: []string{"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `herald`@`%`",
			"GRANT ALL PRIVILEGES ON `herald%`.* TO `herald`@`%`"},
		database: "herald",
		outbox:   true,
	}
	if change != nil {
		change(&s)
	}
	return s
}

func TestJudge(t *testing.T) {
	denied := &driver.MySQLError{Number: errSpecificAccessDenied, Message: "Access denied; you need BINLOG MONITOR"}
	for _, tc := range []struct {
		name string
		s    serverFacts
		want []string // one substring per problem, in order
	}{
		{"ready", facts(nil), nil},
		{"binlog off", facts(func(s *serverFacts) {
			s.variables["log_bin"] = "OFF"
			s.monitorErr = &driver.MySQLError{Number: errNoBinaryLogging, Message: "You are not using binary logging"}
		}), []string{"binary logging is off (log_bin=OFF): set log_bin=<base name> in the server's configuration file ([mariadbd] section)"}},
		{"statement format", facts(func(s *serverFacts) { s.variables["binlog_format"] = "STATEMENT" }),
			[]string{"binlog_format is STATEMENT, want ROW (the reader decodes row events, not statements): SET GLOBAL binlog_format=ROW"}},
		{"mixed format", facts(func(s *serverFacts) { s.variables["binlog_format"] = "MIXED" }),
			[]string{"binlog_format is MIXED, want ROW"}},
		{"minimal image", facts(func(s *serverFacts) { s.variables["binlog_row_image"] = "MINIMAL" }),
			[]string{"binlog_row_image is MINIMAL, want FULL (an insert's row event must carry every column): SET GLOBAL binlog_row_image=FULL"}},
		{"noblob image", facts(func(s *serverFacts) { s.variables["binlog_row_image"] = "noblob" }),
			[]string{"binlog_row_image is NOBLOB, want FULL"}},
		{"minimal metadata", facts(func(s *serverFacts) { s.variables["binlog_row_metadata"] = "MINIMAL" }),
			[]string{"binlog_row_metadata is MINIMAL, want FULL (rows are decoded by column name"}},
		{"metadata unknown to an old server", facts(func(s *serverFacts) { delete(s.variables, "binlog_row_metadata") }),
			[]string{"binlog_row_metadata is unknown to this server (MariaDB 10.5+ or MySQL 8.0.1+ have it)"}},
		{"no replication slave", facts(func(s *serverFacts) {
			s.grants = []string{"GRANT BINLOG MONITOR ON *.* TO `herald`@`%`"}
		}), []string{"lacks REPLICATION SLAVE (it streams the binlog): GRANT REPLICATION SLAVE ON *.* TO 'herald'@'%'"}},
		{"all privileges", facts(func(s *serverFacts) {
			s.grants = []string{"GRANT ALL PRIVILEGES ON *.* TO `herald`@`%` WITH GRANT OPTION"}
		}), nil},
		{"replication slave on a database only does not count", facts(func(s *serverFacts) {
			s.grants = []string{"GRANT ALL PRIVILEGES ON `herald`.* TO `herald`@`%`"}
		}), []string{"lacks REPLICATION SLAVE"}},
		{"a role may carry it", facts(func(s *serverFacts) {
			s.grants = []string{"GRANT USAGE ON *.* TO `herald`@`%`", "GRANT `replicator` TO `herald`@`%`"}
		}), nil},
		{"no binlog monitor on MariaDB", facts(func(s *serverFacts) { s.monitorErr = denied }),
			[]string{"lacks BINLOG MONITOR (it reads the binlog's head and files, called REPLICATION CLIENT before MariaDB 10.5): GRANT BINLOG MONITOR ON *.* TO 'herald'@'%'"}},
		{"no replication client on MySQL", facts(func(s *serverFacts) {
			s.flavor = gomysql.MySQLFlavor
			s.grants = []string{"GRANT REPLICATION SLAVE ON *.* TO `herald`@`%`"}
			s.monitorErr = denied
		}), []string{"lacks REPLICATION CLIENT (it reads the binlog's head and files): GRANT REPLICATION CLIENT ON *.* TO 'herald'@'%'"}},
		{"MySQL config section", facts(func(s *serverFacts) {
			s.flavor = gomysql.MySQLFlavor
			s.variables["log_bin"] = "OFF"
		}), []string{"([mysqld] section)"}},
		{"no process privilege", facts(func(s *serverFacts) { s.processErr = denied }),
			[]string{"lacks PROCESS (the stream's watermark reads the open transactions in information_schema.innodb_trx; docs/design.md, section 9.3): GRANT PROCESS ON *.* TO 'herald'@'%'"}},
		{"no database", facts(func(s *serverFacts) { s.database, s.outbox = "", false }),
			[]string{"the connection has no database: name the outbox's database in the DSN"}},
		{"no outbox", facts(func(s *serverFacts) { s.outbox = false }),
			[]string{"table outbox_events does not exist in database herald: run `herald migrate` on it"}},
		{"everything wrong at once", facts(func(s *serverFacts) {
			s.variables = map[string]string{"log_bin": "OFF", "binlog_format": "STATEMENT", "binlog_row_image": "MINIMAL",
				"binlog_row_metadata": "NO_LOG"}
			s.grants = []string{"GRANT USAGE ON *.* TO `herald`@`%`"}
			s.monitorErr, s.processErr = denied, denied
			s.outbox = false
		}), []string{"log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata", "REPLICATION SLAVE",
			"BINLOG MONITOR", "PROCESS", "outbox_events"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.s)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems %q, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d: %q does not say %q", i, got[i], w)
				}
			}
		})
	}
}

func TestCheckErrorText(t *testing.T) {
	err := &CheckError{Problems: []string{"a is wrong", "b is wrong"}}
	if got := err.Error(); got != "binlog source not ready (2 problem(s)): a is wrong; b is wrong" {
		t.Fatal(got)
	}
}

func TestLagState(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	files := []LogFile{{"b.000001", 1000}, {"b.000002", 500}, {"b.000003", 300}}
	for _, tc := range []struct {
		name    string
		l       *lagState
		bytes   int64
		seconds float64
	}{
		{"before the first poll", &lagState{file: "b.000003", offset: 100}, -1, 0},
		{"file unknown yet", &lagState{files: files}, -1, 0},
		{"at the head", &lagState{files: files, file: "b.000003", offset: 300, commit: now.Add(-time.Hour)}, 0, 0},
		{"past the polled head", &lagState{files: files, file: "b.000003", offset: 400}, 0, 0},
		{"in a file newer than the poll", &lagState{files: files, file: "b.000004", offset: 4}, 0, 0},
		{"in a file newer than the poll, wider counter", &lagState{files: []LogFile{{"b.999999", 10}}, file: "b.1000000", offset: 4}, 0, 0},
		{"behind in the last file", &lagState{files: files, file: "b.000003", offset: 100, commit: now.Add(-2 * time.Second)}, 200, 2},
		{"behind by files", &lagState{files: files, file: "b.000001", offset: 400, commit: now.Add(-3 * time.Second)}, 600 + 500 + 300, 3},
		{"at the head a second ago", &lagState{files: files, file: "b.000002", offset: 100, commit: now.Add(-time.Hour),
			atHead: now.Add(-time.Second)}, 400 + 300, 1},
		{"purged under the reader", &lagState{files: files[1:], file: "b.000001", offset: 4}, -1, 0},
		{"server clock ahead", &lagState{files: files, file: "b.000003", offset: 299, commit: now, skew: 500 * time.Millisecond}, 1, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bytes, seconds := tc.l.lag(now)
			if bytes != tc.bytes || seconds != tc.seconds {
				t.Fatalf("lag %d bytes %.3fs, want %d bytes %.3fs", bytes, seconds, tc.bytes, tc.seconds)
			}
		})
	}
}

func TestFatal(t *testing.T) {
	from := Position{kind: kindFile, file: "b.000001", offset: 4}
	for _, tc := range []struct {
		name   string
		err    error
		purged bool
		says   string // "" for an error retrying may fix
	}{
		{"network", errors.New("read tcp: connection reset by peer"), false, ""},
		{"shutdown", &gomysql.MyError{Code: 1053, Message: "Server shutdown in progress"}, false, ""},
		{"purged MySQL", &gomysql.MyError{Code: errFatalReadingBinlog, Message: "Cannot replicate because the source purged required binary logs."}, true, "purged"},
		{"missing file", &gomysql.MyError{Code: errFatalReadingBinlog, Message: "Could not find first log file name in binary log index file"}, true, "Could not find"},
		{"other fatal read", &gomysql.MyError{Code: errFatalReadingBinlog, Message: "log event entry exceeded max_allowed_packet"}, false, "cannot stream from file:b.000001:4"},
		{"no grant", &gomysql.MyError{Code: errAccessDenied, Message: "Access denied for user"}, false, "GRANT REPLICATION SLAVE ON *.*"},
		{"closed", changestream.ErrClosed, false, "closed"},
		{"undecodable row", fmt.Errorf("parse: %w", &changestream.DecodeError{Err: errors.New("binlog: decode a row event of d.outbox_events: bad")}),
			false, "decode a row event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fatal(tc.err, from)
			if tc.says == "" {
				if err != nil {
					t.Fatalf("fatal: %v, want retry", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.says) || errors.Is(err, changestream.ErrPositionGone) != tc.purged {
				t.Fatalf("fatal: %v, want one saying %q (purged %v)", err, tc.says, tc.purged)
			}
		})
	}
}

func TestSavepointName(t *testing.T) {
	for stmt, want := range map[string]string{
		"SAVEPOINT `S1`":        "S1",
		"SAVEPOINT S1":          "S1",
		"SAVEPOINT `A``B C`":    "A`B C",
		"ROLLBACK TO `S 2`":     "S 2",
		"ROLLBACK TO  `S3` ":    "S3",
		"ROLLBACK TO SAVEPOINT": "SAVEPOINT",
	} {
		prefix := "SAVEPOINT "
		if strings.HasPrefix(stmt, "ROLLBACK") {
			prefix = "ROLLBACK TO "
		}
		if got := savepointName(stmt, prefix); got != want {
			t.Errorf("savepointName(%q) = %q, want %q", stmt, got, want)
		}
	}
}

func TestRollbackTo(t *testing.T) {
	g := group{events: make([]store.Event, 5), savepoints: []savepoint{{"A", 1}, {"B", 3}, {"A", 4}}}
	g.rollbackTo("B")
	if len(g.events) != 3 || len(g.savepoints) != 2 {
		t.Fatalf("after ROLLBACK TO B: %d events, savepoints %v", len(g.events), g.savepoints)
	}
	g.rollbackTo("A") // the latest A, set before B, is the one that counts now
	if len(g.events) != 1 || len(g.savepoints) != 1 {
		t.Fatalf("after ROLLBACK TO A: %d events, savepoints %v", len(g.events), g.savepoints)
	}
	g.rollbackTo("unknown")
	if len(g.events) != 1 {
		t.Fatalf("unknown savepoint changed the events")
	}
}
