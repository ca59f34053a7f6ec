// Package writers_test runs every writer snippet of docs/writers.md (PHP
// PDO and the Laravel shape, Python, Java JDBC, Node mysql2 and pg, plain
// Go database/sql) against the real stack, through the polling relay and
// the binlog relay on MariaDB and the polling relay on PostgreSQL, and
// checks with an independent reader (kcat) what reached Kafka.
package writers_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the Go snippet's PostgreSQL driver

	"github.com/herald-outbox/herald/examples/writers/gosql"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// ordersPerWorker and workers shape every language's load: per worker, 6
// orders of which one (the fourth) is over the credit limit and rolled
// back, 5 cancellations, and one cancellation that finds nothing.
const (
	ordersPerWorker = 6
	workers         = 4
	// appZone is every writer's application clock; sessions are at +05:30.
	appZone = "Asia/Shanghai"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	if javaClasses.dir != "" {
		os.RemoveAll(javaClasses.dir)
	}
	os.Exit(code)
}

// outcome is one line a worker prints.
type outcome struct {
	Outcome   string `json:"outcome"` // committed or rolled_back
	EventType string `json:"event_type"`
	OrderID   string `json:"order_id"`
	EventID   string `json:"event_id"`
}

// conn is how a snippet reaches its database.
type conn struct {
	db                                       string // mysql or postgres
	host, port, user, password, databaseName string
}

func (c conn) env(customer int) []string {
	return []string{"WRITER_DB=" + c.db, "WRITER_HOST=" + c.host, "WRITER_PORT=" + c.port, "WRITER_USER=" + c.user,
		"WRITER_PASSWORD=" + c.password, "WRITER_DATABASE=" + c.databaseName, fmt.Sprintf("WRITER_ORDERS=%d", ordersPerWorker),
		fmt.Sprintf("WRITER_WORKERS=%d", workers), fmt.Sprintf("WRITER_CUSTOMER=%d", customer), "TZ=" + appZone}
}

func connOf(t *testing.T, d *testenv.Database) conn {
	t.Helper()
	if d.Server == testenv.PostgreSQL {
		u, err := url.Parse(d.DSN)
		if err != nil {
			t.Fatal(err)
		}
		password, _ := u.User.Password()
		return conn{"postgres", u.Hostname(), u.Port(), u.User.Username(), password, strings.TrimPrefix(u.Path, "/")}
	}
	cfg, err := driver.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(cfg.Addr, ":")
	return conn{"mysql", host, port, cfg.User, cfg.Passwd, cfg.DBName}
}

// runtimes is where stack/writers.sh put the drivers.
func runtimes(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("HERALD_CACHE_DIR")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "herald")
	}
	dir := filepath.Join(cache, "writers")
	for _, p := range []string{"node/node_modules/mysql2", "node/node_modules/pg", "java/jars"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("the writer snippets' drivers are missing (%v): run `make up` (stack/writers.sh)", err)
		}
	}
	return dir
}

// javaClasses compiles the Java snippet and its runner once.
var javaClasses struct {
	once sync.Once
	dir  string
	err  error
}

func compileJava(t *testing.T, jars string) string {
	t.Helper()
	javaClasses.once.Do(func() {
		javaClasses.dir, javaClasses.err = os.MkdirTemp("", "herald-writers-java-")
		if javaClasses.err != nil {
			return
		}
		out, err := exec.Command("javac", "-d", javaClasses.dir, "java/Orders.java", "java/Run.java").CombinedOutput()
		if err != nil {
			javaClasses.err = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if javaClasses.err != nil {
		t.Fatal(javaClasses.err)
	}
	return javaClasses.dir + ":" + jars + "/*"
}

// language runs one snippet's workers on a database and returns what they
// printed.
type language struct {
	name string
	run  func(ctx context.Context, t *testing.T, d *testenv.Database, customer int) ([]outcome, error)
}

// command runs a snippet's runner: processes copies of it, each with its own
// customers, and parses their lines.
func command(processes int, name string, args []string, extraEnv func(rt string) []string) func(context.Context, *testing.T, *testenv.Database, int) ([]outcome, error) {
	return func(ctx context.Context, t *testing.T, d *testenv.Database, customer int) ([]outcome, error) {
		rt := runtimes(t)
		c := connOf(t, d)
		var mu sync.Mutex
		var all []outcome
		var wg sync.WaitGroup
		errs := make(chan error, processes)
		for p := range processes {
			wg.Go(func() {
				bin, cmdArgs := name, args
				if name == "java" {
					cmdArgs = append([]string{"-cp", compileJava(t, filepath.Join(rt, "java", "jars"))}, args...)
				}
				cmd := exec.CommandContext(ctx, bin, cmdArgs...)
				env := c.env(customer + p*workers)
				if processes > 1 {
					env = append(env, "WRITER_WORKERS=1")
				}
				cmd.Env = append(append(os.Environ(), env...), extraEnv(rt)...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					errs <- fmt.Errorf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
					return
				}
				lines, err := parse(stdout.Bytes())
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, lines...)
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		return all, errors.Join(collect(errs)...)
	}
}

func collect(errs chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func parse(out []byte) ([]outcome, error) {
	var lines []outcome
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var o outcome
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("worker line %q: %w", sc.Text(), err)
		}
		lines = append(lines, o)
	}
	return lines, sc.Err()
}

func noEnv(string) []string { return nil }

// languages are the snippets, each run as a service in that language would
// run them.
var languages = []language{
	// PHP has no threads: four processes of one worker each.
	{"php-pdo", command(workers, "php", []string{"php/run.php", "pdo"}, noEnv)},
	{"php-laravel", command(workers, "php", []string{"php/run.php", "laravel"}, noEnv)},
	// Debian's python, with python3-pymysql and python3-psycopg2, whatever
	// a pyenv shim would put first on the PATH.
	{"python", command(1, "/usr/bin/python3", []string{"python/run.py"}, func(string) []string {
		return []string{"PYTHONDONTWRITEBYTECODE=1"} // no __pycache__ in the work tree
	})},
	{"java", command(1, "java", []string{"Run"}, noEnv)},
	{"node", command(1, "node", []string{"node/run.js"}, func(rt string) []string {
		return []string{"NODE_PATH=" + filepath.Join(rt, "node", "node_modules")}
	})},
	{"go", runGo},
}

// runGo runs the Go snippet's workers in this process, on a pool opened
// as a service would open it (its session at +05:30, its parameters
// interpolated: no herald setting).
func runGo(ctx context.Context, t *testing.T, d *testenv.Database, customer int) ([]outcome, error) {
	o := gosql.Orders{DB: foreignPool(t, d), Postgres: d.Server == testenv.PostgreSQL}
	var mu sync.Mutex
	var all []outcome
	emit := func(x outcome) {
		mu.Lock()
		all = append(all, x)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			var created []int64
			for k := range ordersPerWorker {
				total := fmt.Sprintf("%d.50", 100+k)
				if k%4 == 3 {
					total = "5000.00"
				}
				orderID, eventID, err := o.Create(ctx, int64(customer+w), total)
				if errors.Is(err, gosql.ErrCreditLimit) {
					emit(outcome{Outcome: "rolled_back", EventType: "order.created"})
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				created = append(created, orderID)
				emit(outcome{"committed", "order.created", fmt.Sprint(orderID), eventID})
			}
			for _, id := range created {
				eventID, err := o.Cancel(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				emit(outcome{"committed", "order.cancelled", fmt.Sprint(id), eventID})
			}
			if len(created) > 0 {
				if eventID, err := o.Cancel(ctx, created[0]); err != nil || eventID != "" {
					errs <- fmt.Errorf("second cancel of order %d: event %q, %v", created[0], eventID, err)
					return
				}
				emit(outcome{Outcome: "rolled_back", EventType: "order.cancelled", OrderID: fmt.Sprint(created[0])})
			}
		})
	}
	wg.Wait()
	close(errs)
	return all, errors.Join(collect(errs)...)
}

func foreignPool(t *testing.T, d *testenv.Database) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if d.Server == testenv.PostgreSQL {
		u, perr := url.Parse(d.DSN)
		if perr != nil {
			t.Fatal(perr)
		}
		q := u.Query()
		q.Set("timezone", "<+05:30>-05:30") // POSIX's sign: five and a half hours east
		u.RawQuery = q.Encode()
		db, err = sql.Open("pgx", u.String())
	} else {
		cfg, perr := driver.ParseDSN(d.DSN)
		if perr != nil {
			t.Fatal(perr)
		}
		cfg.Params = map[string]string{"time_zone": "'+05:30'"}
		db, err = sql.Open("mysql", cfg.FormatDSN())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// source is one relay setup the snippets publish through.
type source struct {
	name   string
	server testenv.Server
	env    []string
}

var sources = []source{
	{"mariadb-poll", testenv.MariaDB, nil},
	{"mariadb-binlog", testenv.MariaDB, []string{"HERALD_SOURCE=binlog"}},
	{"postgres-poll", testenv.PostgreSQL, nil},
}

// TestSnippetsPublish: every language's snippet, 4 concurrent workers
// each, writes orders (every fourth rolled back by its credit limit) and
// cancels each in a later transaction, from an application clock at
// +08:00 and sessions at +05:30, into one database per relay source. Then:
// the database holds exactly the events the workers say they committed;
// kcat finds each at least once on the source's topic, nothing else (no
// rolled-back event: it would be a stranger), every aggregate on one
// partition in aggregate_seq order, and each order's created before its
// cancelled; the binlog relay streamed every event itself (none handed to
// the polling path), so the trigger's aggregate_seq and next_attempt_at
// were in the binlog's row images.
func TestSnippetsPublish(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	runtimes(t)
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			t.Parallel()
			testSource(t, src, brokers)
		})
	}
}

func testSource(t *testing.T, src source, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := testenv.NewHeraldDatabaseOn(t, src.server)
	ddl, err := os.ReadFile(map[testenv.Server]string{testenv.MariaDB: "orders.mysql.sql", testenv.PostgreSQL: "orders.postgres.sql"}[src.server])
	if err != nil {
		t.Fatal(err)
	}
	d.Exec(t, string(ddl))
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	relay := testenv.StartRelay(t, testenv.RelayOptions{Name: "relay-" + src.name, DSN: d.DSN, Brokers: brokers,
		Topics: map[string]string{"order": topic}, Env: src.env})
	if len(src.env) > 0 {
		relay.WaitForLog(t, `"msg":"streaming"`, time.Minute)
	}

	var mu sync.Mutex
	byLanguage := map[string][]outcome{}
	var wg sync.WaitGroup
	for i, lang := range languages {
		wg.Go(func() {
			got, err := lang.run(ctx, t, d, (i+1)*100)
			if err != nil {
				t.Errorf("%s: %v", lang.name, err)
			}
			mu.Lock()
			byLanguage[lang.name] = got
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	committed := map[string]outcome{} // event id -> its outcome
	perOrder := map[string]map[string]string{}
	for _, lang := range languages {
		counts := map[string]int{}
		for _, o := range byLanguage[lang.name] {
			counts[o.Outcome+" "+o.EventType]++
			if o.Outcome != "committed" {
				continue
			}
			committed[o.EventID] = o
			if perOrder[o.OrderID] == nil {
				perOrder[o.OrderID] = map[string]string{}
			}
			perOrder[o.OrderID][o.EventType] = o.EventID
		}
		rolledBack := ordersPerWorker / 4 * workers
		want := map[string]int{
			"committed order.created": ordersPerWorker*workers - rolledBack, "rolled_back order.created": rolledBack,
			"committed order.cancelled": ordersPerWorker*workers - rolledBack, "rolled_back order.cancelled": workers,
		}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Errorf("%s: outcomes %v, want %v", lang.name, counts, want)
		}
	}

	rows, err := verify.LoadOutbox(ctx, d.DB)
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]verify.Row{}
	for _, r := range rows {
		inDB[r.ID] = r
		if _, ok := committed[r.ID]; !ok {
			t.Errorf("row %s (%s/%s) is in outbox_events, but no worker committed it", r.ID, r.AggregateType, r.AggregateID)
		}
	}
	for id, o := range committed {
		r, ok := inDB[id]
		switch {
		case !ok:
			t.Errorf("committed event %s (order %s, %s) is not in outbox_events", id, o.OrderID, o.EventType)
		case r.AggregateID != o.OrderID || r.Seq != map[string]uint64{"order.created": 1, "order.cancelled": 2}[o.EventType]:
			t.Errorf("event %s: aggregate %s #%d, want order %s's %s", id, r.AggregateID, r.Seq, o.OrderID, o.EventType)
		}
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM orders"); n != len(perOrder) {
		t.Errorf("%d orders in the table, want the %d committed", n, len(perOrder))
	}
	if t.Failed() {
		return
	}

	testenv.WaitFor(t, 2*time.Minute, "every committed event published", func() (bool, string) {
		n := d.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE NOT "+verify.PublishedSQL)
		return n == 0, fmt.Sprintf("%d unpublished; relay log:\n%s", n, relay.Tail(10))
	})
	records, err := verify.ReadTopic(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	report := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records})
	if !report.OK() {
		t.Errorf("topic %s: %s", topic, report)
	}
	for orderID, events := range perOrder {
		created, cancelled := report.First[events["order.created"]], report.First[events["order.cancelled"]]
		if created.Partition != cancelled.Partition || created.Offset >= cancelled.Offset {
			t.Errorf("order %s: order.created first at %s, order.cancelled first at %s", orderID, created, cancelled)
		}
	}
	t.Logf("%s: %s", src.name, report.Summary())

	if len(src.env) > 0 {
		streamed, err := relay.Metric("herald_relay_stream_events_total")
		if err != nil {
			t.Fatal(err)
		}
		handed, err := relay.Metric("herald_relay_stream_handed_over_total")
		if err != nil {
			t.Fatal(err)
		}
		if int(streamed) < len(committed) || handed != 0 {
			t.Errorf("the binlog relay streamed %v events and handed %v to the polling path; want all %d streamed, none handed over",
				streamed, handed, len(committed))
		}
	}
}
