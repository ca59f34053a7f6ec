package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store/mysql/binlog"
	"github.com/herald-outbox/herald/store/postgres"
	"github.com/herald-outbox/herald/testkit/localstack"
)

// stack is the local stack's servers as the harness uses them, and what
// it created there, so it can remove it all.
type stack struct {
	cfg     Config
	admin   *sql.DB // the herald user, no database selected
	kafka   *kgo.Client
	kadm    *kadm.Client
	brokers int
	rf      int

	databases []string
	topics    []string
	// pg is the herald role on PostgreSQL's postgres database, opened for
	// the first PostgreSQL database; pgDatabases what it created.
	pg          *sql.DB
	pgDatabases []string
}

func openStack(ctx context.Context, cfg Config) (*stack, error) {
	admin, err := sql.Open("mysql", cfg.dsn(""))
	if err != nil {
		return nil, err
	}
	if err := retry(ctx, "MariaDB", func() error { return admin.PingContext(ctx) }); err != nil {
		admin.Close()
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		admin.Close()
		return nil, err
	}
	s := &stack{cfg: cfg, admin: admin, kafka: cl, kadm: kadm.NewClient(cl)}
	err = retry(ctx, "Kafka", func() error {
		md, err := s.kadm.BrokerMetadata(ctx)
		if err == nil {
			s.brokers = len(md.Brokers)
		}
		return err
	})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// retry calls fn until it succeeds or a minute passed: the shared servers
// are restarted at times by other runs.
func retry(ctx context.Context, what string, fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (s *stack) close() {
	s.kafka.Close()
	s.admin.Close()
	if s.pg != nil {
		s.pg.Close()
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newDatabase creates a database herald_bench_<suffix>, with herald's
// schema when heraldSchema, and returns its name and a pool on it.
func (s *stack) newDatabase(ctx context.Context, heraldSchema bool) (string, *sql.DB, error) {
	name := "herald_bench_" + randomSuffix()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	s.databases = append(s.databases, name)
	db, _, err := database.Open(ctx, s.cfg.dsn(name), database.ConnOptions{})
	if err != nil {
		return "", nil, err
	}
	if heraldSchema {
		if _, err := migrations.Herald.Up(ctx, db); err != nil {
			db.Close()
			return "", nil, fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return name, db, nil
}

func (s *stack) dropDatabase(ctx context.Context, name string) error {
	_, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	if err == nil {
		for i, d := range s.databases {
			if d == name {
				s.databases = append(s.databases[:i], s.databases[i+1:]...)
				break
			}
		}
	}
	return err
}

// newTopic creates a topic with the run's partitions, the cluster's
// default replication factor and LogAppendTime timestamps (the broker's
// clock stamps each record as it appends it: the end of the delivery
// delay).
func (s *stack) newTopic(ctx context.Context, prefix string) (string, error) {
	name := "herald-bench-" + prefix + "-" + randomSuffix()
	appendTime := "LogAppendTime"
	var resp kadm.CreateTopicResponse
	err := retry(ctx, "create topic", func() error {
		var err error
		resp, err = s.kadm.CreateTopic(ctx, int32(s.cfg.Partitions), -1,
			map[string]*string{"message.timestamp.type": &appendTime}, name)
		if err == nil {
			err = resp.Err
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create topic %s: %w", name, err)
	}
	s.topics = append(s.topics, name)
	if s.rf == 0 {
		s.rf = int(resp.ReplicationFactor)
	}
	return name, nil
}

func (s *stack) deleteTopic(ctx context.Context, name string) error {
	_, err := s.kadm.DeleteTopic(ctx, name)
	if err == nil {
		for i, t := range s.topics {
			if t == name {
				s.topics = append(s.topics[:i], s.topics[i+1:]...)
				break
			}
		}
	}
	return err
}

// cleanup drops every database and deletes every topic the harness still
// has, and purges the binary logs; it reports what it could not do.
func (s *stack) cleanup() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var failed []string
	for _, d := range append([]string(nil), s.databases...) {
		if err := s.dropDatabase(ctx, d); err != nil {
			failed = append(failed, fmt.Sprintf("drop database %s: %v", d, err))
		}
	}
	for _, d := range append([]string(nil), s.pgDatabases...) {
		if err := s.dropPostgresDatabase(ctx, d); err != nil {
			failed = append(failed, fmt.Sprintf("drop database %s: %v", d, err))
		}
	}
	for _, t := range append([]string(nil), s.topics...) {
		if err := s.deleteTopic(ctx, t); err != nil {
			failed = append(failed, fmt.Sprintf("delete topic %s: %v", t, err))
		}
	}
	if err := purgeBinlogs(); err != nil {
		failed = append(failed, err.Error())
	}
	return failed
}

// purgeBinlogs removes the binary logs before the current one, as root
// over the stack's socket (the herald user may not).
func purgeBinlogs() error {
	return localstack.MariaDBRoot("PURGE BINARY LOGS BEFORE NOW()")
}

// binlogBytes is the total size of the server's binary logs.
func (s *stack) binlogBytes(ctx context.Context) (int64, error) {
	files, err := binlog.ListLogs(ctx, s.admin)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	return total, nil
}

// dbMark is where the database's counters stood at a moment.
type dbMark struct {
	cpu    float64
	binlog int64
	err    error
}

func (s *stack) mark(ctx context.Context) dbMark {
	cpu, err := localstack.MariaDBCPU()
	if err != nil {
		return dbMark{err: err}
	}
	b, err := s.binlogBytes(ctx)
	return dbMark{cpu: cpu.Seconds(), binlog: b, err: err}
}

// costSince is the database's work from m0 to m1 per event; -1 where a
// mark could not be read (a restarted server's counters start over, too).
func costSince(m0, m1 dbMark, events int) DatabaseCost {
	if m0.err != nil || m1.err != nil || events == 0 || m1.cpu < m0.cpu || m1.binlog < m0.binlog {
		return DatabaseCost{CPUSecondsPerEvent: -1, BinlogBytesPerEvent: -1}
	}
	return DatabaseCost{CPUSecondsPerEvent: (m1.cpu - m0.cpu) / float64(events),
		BinlogBytesPerEvent: float64(m1.binlog-m0.binlog) / float64(events)}
}

// freeAddr is a loopback address no one listens on right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// postgresDSN is the herald role's URL of PostgreSQL database name on the
// local stack (HERALD_POSTGRES_URL's server).
func postgresDSN(name string) string {
	u, err := url.Parse(localstack.PostgresURL())
	if err != nil {
		return localstack.PostgresURL()
	}
	u.Path = "/" + name
	return u.String()
}

// newPostgresDatabase is newDatabase on the stack's PostgreSQL.
func (s *stack) newPostgresDatabase(ctx context.Context, heraldSchema bool) (string, *sql.DB, error) {
	if s.pg == nil {
		db, _, err := database.Open(ctx, localstack.PostgresURL(), database.ConnOptions{})
		if err != nil {
			return "", nil, err
		}
		s.pg = db
	}
	name := "herald_bench_" + randomSuffix()
	if _, err := s.pg.ExecContext(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	s.pgDatabases = append(s.pgDatabases, name)
	db, _, err := database.Open(ctx, postgresDSN(name), database.ConnOptions{})
	if err != nil {
		return "", nil, err
	}
	if heraldSchema {
		if _, err := migrations.Herald.Up(ctx, db); err != nil {
			db.Close()
			return "", nil, fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return name, db, nil
}

// dropPostgresDatabase drops a database newPostgresDatabase made, with its
// replication slot.
func (s *stack) dropPostgresDatabase(ctx context.Context, name string) error {
	if s.pg == nil {
		return nil
	}
	err := database.DropDatabase(ctx, s.pg, postgres.Dialect{}, name)
	if err == nil {
		s.pgDatabases = slices.DeleteFunc(s.pgDatabases, func(d string) bool { return d == name })
	}
	return err
}
