package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/testkit/localstack"
)

// Defaults of DebeziumConnector.
const (
	// DebeziumTableDefault is the outbox table of a DebeziumConnector
	// without one: Debezium's documentation names its example table
	// "outbox".
	DebeziumTableDefault = "outbox"
	// DebeziumServerIDMin is the smallest ServerID drawn for a connector
	// without one: ids in [2^30, 2^31), below the range herald's binlog
	// reader draws from (binlog.ServerIDMin, 2^31), so the two never take
	// each other's replica slot on the shared server.
	DebeziumServerIDMin = 1 << 30
)

// Timeouts of the Debezium harness.
const (
	// debeziumBuildTimeout bounds bench/debezium/build.sh: on a fresh
	// machine Maven downloads about 50 MB of jars.
	debeziumBuildTimeout = 20 * time.Minute
	// debeziumStartTimeout bounds the wait from the JVM's start until
	// every connector streams (about 15 s on an idle machine, 69 s seen at
	// load average 14 on 2 cores).
	debeziumStartTimeout = 5 * time.Minute
	// debeziumStopTimeout bounds a stop: run.sh's watcher kills a worker
	// whose shutdown hangs after DBZ_STOP_TIMEOUT (30 s); this kills it if
	// even that did not happen.
	debeziumStopTimeout = time.Minute
)

// DebeziumConnector is one connector of a Debezium worker started by
// StartDebezium: Debezium's MariaDB connector with the Outbox Event Router
// (transform "outbox") on one table of the stack's MariaDB.
//
// Its connector.properties is bench/debezium/run.sh's, then the harness's
// defaults for tests, then Properties (a later line of a key wins). The
// harness's defaults:
//
//	snapshot.mode=no_data                  (DBZ_SNAPSHOT_MODE) schema only, then the binlog
//	snapshot.locking.mode=none             (DBZ_SNAPSHOT_LOCKING_MODE) no RELOAD needed
//	topic.prefix=herald_dbz_<name>_<random> unique per connector
//	transforms.outbox.table.field.event.id=id
//	transforms.outbox.table.field.event.key=aggregateid
//	transforms.outbox.table.field.event.payload=payload
//	transforms.outbox.route.by.field=aggregatetype
//	transforms.outbox.route.topic.replacement=outbox.event.${routedByValue}
//
// The transforms.outbox lines are Debezium's own defaults (run.sh maps
// herald's outbox_events instead), for a table with Debezium's default
// columns:
//
//	CREATE TABLE outbox (id CHAR(36) PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
//	  aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON)
//
// run.sh sets the rest: include.schema.changes=false, the schema history in
// the connector's own state directory, StringConverter for keys and
// values (the worker's), Connect's SimpleHeaderConverter for headers.
// Debezium adds its four __debezium.context.* headers to every record
// unless Properties say extended.headers.enabled=false (a property of the
// connector, not of the router).
//
// Topics are not created by Connect here (the stack's brokers do not
// create topics either): every topic a connector routes to must exist
// before a row is inserted for it, or Connect's producer waits for it
// without end.
type DebeziumConnector struct {
	// Name is the connector's name in the worker (REST API, offsets,
	// log lines), of [A-Za-z0-9._-]. Defaults to "debezium-<n>", n its
	// position among StartDebezium's connectors, from 1.
	Name string
	// Database is the MariaDB database holding the table, on the server of
	// localstack.MySQLDSN (Database.Name of NewDatabase). Required.
	Database string
	// Table is the outbox table in Database. Defaults to
	// DebeziumTableDefault.
	Table string
	// ServerID is the binlog replica id, unique among the server's
	// replicas. Defaults to a random id from DebeziumServerIDMin.
	ServerID uint32
	// Properties are further connector properties, each winning over the
	// same key of run.sh and of the harness: router settings
	// (transforms.outbox.*), converters (key.converter, value.converter
	// and their .schemas.enable), extended.headers.enabled, ... Keys are
	// of [A-Za-z0-9_.-]; "name" is Name's. Values are written escaped, as
	// they are.
	Properties map[string]string
}

// Debezium is a Kafka Connect standalone worker running Debezium's
// connectors, started by StartDebezium and stopped when the test ends.
type Debezium struct {
	// Process is the worker (run.sh execs the JVM: its pid is the JVM's);
	// its log is the worker's stderr.
	Process *Process
	// RESTURL is the worker's REST API, http://127.0.0.1:<port>.
	RESTURL string
	// StateDir holds the offsets, the generated properties and, per
	// connector, the schema history.
	StateDir string
	// Connectors are the connectors as started: defaults filled in,
	// Properties holding every property the harness added to run.sh's
	// (its defaults, then the caller's).
	Connectors []DebeziumConnector
	// BuildTook is how long this call waited for bench/debezium/build.sh
	// (well under a second once built; zero when an earlier call of the test
	// process built it).
	BuildTook time.Duration
	// StartTook is the time from the JVM's start until every connector
	// was streaming.
	StartTook time.Duration

	mu      sync.Mutex
	stopped bool
	client  *http.Client
}

// StartDebezium runs Debezium 3.5.0.Final in one Kafka Connect standalone
// worker (bench/debezium/run.sh) with connectors, each on its own database
// or table, and returns once every one streams: the connector and its task
// are RUNNING in Connect's REST status and its binlog client has connected
// (its "Connected to binlog at ..." line in the worker's log) from the
// binlog position its schema snapshot read. So every row committed after
// StartDebezium returns is published; callers need no probe row.
//
// It builds bench/debezium first when needed (build.sh: Maven, minutes on
// a fresh machine), grants RELOAD (grant.sh) only if a connector's
// Properties choose a snapshot.locking.mode other than none, and stops the
// worker when t ends (Stop). If the worker exits before the test stops it
// (run.sh's watcher stops it when a connector or task FAILS), t fails. On
// a failure the end of the worker's log is in t's log.
func StartDebezium(t testing.TB, connectors ...DebeziumConnector) *Debezium {
	t.Helper()
	if len(connectors) == 0 {
		t.Fatal("StartDebezium: no connector")
	}
	connectors = debeziumDefaults(t, connectors)
	dir := filepath.Join(RepoRoot(t), "bench", "debezium")
	d := &Debezium{Connectors: connectors, StateDir: t.TempDir(), client: &http.Client{Timeout: 5 * time.Second}}
	d.BuildTook = buildDebezium(t, dir)
	if slices.ContainsFunc(connectors, func(c DebeziumConnector) bool {
		return c.Properties["snapshot.locking.mode"] != "none"
	}) {
		grantDebezium(t, dir)
	}

	db, err := driver.ParseDSN(localstack.MySQLDSN())
	if err != nil {
		t.Fatalf("StartDebezium: HERALD_MYSQL_DSN: %v", err)
	}
	host, port, err := net.SplitHostPort(db.Addr)
	if db.Net != "tcp" || err != nil {
		t.Fatalf("StartDebezium: Debezium reaches MariaDB over TCP; HERALD_MYSQL_DSN's address is %s(%s)", db.Net, db.Addr)
	}
	brokers := KafkaBrokers(t)
	env := func(c DebeziumConnector, state string) []string {
		extra := filepath.Join(d.StateDir, c.Name+".extra.properties")
		if err := os.WriteFile(extra, javaProperties(c.Properties), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{
			"DBZ_DB_HOST=" + host, "DBZ_DB_PORT=" + port, "DBZ_DB_USER=" + db.User, "DBZ_DB_PASSWORD=" + db.Passwd,
			"DBZ_DB_NAME=" + c.Database, "DBZ_TABLE=" + c.Table, "DBZ_KAFKA_BOOTSTRAP=" + strings.Join(brokers, ","),
			fmt.Sprintf("DBZ_SERVER_ID=%d", c.ServerID), "DBZ_SNAPSHOT_MODE=no_data", "DBZ_SNAPSHOT_LOCKING_MODE=none",
			"DBZ_CONNECTOR_NAME=" + c.Name, "DBZ_CONNECTOR_EXTRA=" + extra, "DBZ_STATE_DIR=" + state,
		}
	}
	run := filepath.Join(dir, "run.sh")

	// The first connector is run.sh's own; run.sh writes each further one
	// (DBZ_DRY_RUN) into a state directory of its own (its schema history),
	// for the worker to load with the first (DBZ_EXTRA_CONNECTORS).
	var extraFiles []string
	for _, c := range connectors[1:] {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, run)
		cmd.Env = append(withoutPrefix(os.Environ(), "DBZ_"), env(c, filepath.Join(d.StateDir, c.Name))...)
		cmd.Env = append(cmd.Env, "DBZ_DRY_RUN=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("StartDebezium: run.sh (DBZ_DRY_RUN=1) for connector %s: %v\n%s", c.Name, err, stderr.String())
		}
		extraFiles = append(extraFiles, strings.TrimSpace(string(out)))
	}

	restPort := freePort(t)
	d.RESTURL = "http://127.0.0.1:" + restPort
	started := time.Now()
	d.Process = StartProcess(t, ProcessOptions{Name: "debezium", Path: run, DropEnv: []string{"DBZ_"},
		Env: append(env(connectors[0], d.StateDir), "DBZ_REST_PORT="+restPort,
			"DBZ_EXTRA_CONNECTORS="+strings.Join(extraFiles, ":"))})
	// Registered after StartProcess's own clean-up, so it runs before it:
	// a clean stop first, its SIGKILL of the group only as the last resort.
	t.Cleanup(func() {
		d.mu.Lock()
		stopped := d.stopped
		d.mu.Unlock()
		if stopped {
			return
		}
		if d.Process.Exited() {
			t.Errorf("the Debezium worker exited during the test (%v); its log ends:\n%s", d.Process.Exit(), d.Process.Tail(40))
			return
		}
		if t.Failed() {
			t.Logf("--- the Debezium worker's log before its stop ends ---\n%s", d.Process.Tail(60))
		}
		if exit := d.Stop(t); exit.Signal != 0 || exit.Code != 143 {
			t.Errorf("the Debezium worker did not stop cleanly on SIGTERM: %v, want exit status 143", exit)
		}
	})

	d.waitStreaming(t)
	d.StartTook = time.Since(started)
	t.Logf("debezium: %d connector(s) streaming %v after the JVM's start (build.sh: %v)", len(connectors),
		d.StartTook.Round(time.Millisecond), d.BuildTook.Round(time.Millisecond))
	return d
}

// debeziumDefaults fills in connectors' defaults and the harness's
// properties, and fails t on a bad connector.
func debeziumDefaults(t testing.TB, connectors []DebeziumConnector) []DebeziumConnector {
	t.Helper()
	name := regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)
	ident := regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	key := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	out := make([]DebeziumConnector, len(connectors))
	seen := map[string]bool{}
	for i, c := range connectors {
		if c.Name == "" {
			c.Name = fmt.Sprintf("debezium-%d", i+1)
		}
		if c.Table == "" {
			c.Table = DebeziumTableDefault
		}
		if c.ServerID == 0 {
			c.ServerID = DebeziumServerIDMin + rand.Uint32N(DebeziumServerIDMin)
		}
		var errs []string
		if !name.MatchString(c.Name) {
			errs = append(errs, fmt.Sprintf("Name %q is not of [A-Za-z0-9._-]", c.Name))
		}
		if seen[c.Name] {
			errs = append(errs, "Name "+c.Name+" is another connector's")
		}
		seen[c.Name] = true
		if !ident.MatchString(c.Database) {
			errs = append(errs, fmt.Sprintf("Database %q is not a database name of [A-Za-z0-9_] (required)", c.Database))
		}
		if !ident.MatchString(c.Table) {
			errs = append(errs, fmt.Sprintf("Table %q is not a table name of [A-Za-z0-9_]", c.Table))
		}
		props := map[string]string{
			"topic.prefix":                                "herald_dbz_" + strings.ReplaceAll(sanitize(c.Name), ".", "_") + "_" + randomSuffix(),
			"snapshot.locking.mode":                       "none",
			"snapshot.mode":                               "no_data",
			"transforms.outbox.table.field.event.id":      "id",
			"transforms.outbox.table.field.event.key":     "aggregateid",
			"transforms.outbox.table.field.event.payload": "payload",
			"transforms.outbox.route.by.field":            "aggregatetype",
			"transforms.outbox.route.topic.replacement":   "outbox.event.${routedByValue}",
		}
		for k, v := range c.Properties {
			switch {
			case k == "name":
				errs = append(errs, "Properties: name is Name's")
			case !key.MatchString(k):
				errs = append(errs, fmt.Sprintf("Properties: key %q is not of [A-Za-z0-9_.-]", k))
			}
			props[k] = v
		}
		if len(errs) > 0 {
			t.Fatalf("StartDebezium: connector %d: %s", i+1, strings.Join(errs, "; "))
		}
		c.Properties = props
		out[i] = c
	}
	return out
}

// javaProperties writes props as the lines of a Java properties file
// (ISO 8859-1, as Connect reads it), sorted by key.
func javaProperties(props map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by testenv.StartDebezium.\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(k + "=" + escapePropertyValue(props[k]) + "\n")
	}
	return b.Bytes()
}

// escapePropertyValue escapes v for the value side of a Java properties
// line (java.util.Properties.load): a backslash, line breaks, a leading
// space and anything beyond ASCII, as \uXXXX of its UTF-16 units.
func escapePropertyValue(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// debeziumBuilt remembers that this test process ran build.sh.
var debeziumBuilt struct {
	mu   sync.Mutex
	done bool
}

// buildDebezium runs bench/debezium/build.sh once per test process, under
// a lock other test processes (packages run in parallel) take too: a build
// empties target/ first. It returns how long it waited.
func buildDebezium(t testing.TB, dir string) time.Duration {
	t.Helper()
	debeziumBuilt.mu.Lock()
	defer debeziumBuilt.mu.Unlock()
	if debeziumBuilt.done {
		return 0
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			requireServer(t, "the Debezium build's "+tool, err)
		}
	}
	start := time.Now()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "herald-debezium-build.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("lock the Debezium build: %v", err)
	}
	defer lock.Close() // releases the lock
	WaitFor(t, debeziumBuildTimeout, "the Debezium build free of another test process", func() (bool, string) {
		err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		return err == nil, fmt.Sprint(err)
	})
	ctx, cancel := context.WithTimeout(context.Background(), debeziumBuildTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, filepath.Join(dir, "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("bench/debezium/build.sh: %v\n%s", err, out)
	}
	debeziumBuilt.done = true
	return time.Since(start)
}

// grantDebezium runs bench/debezium/grant.sh: RELOAD for the snapshot's
// FLUSH TABLES ... WITH READ LOCK, as MariaDB's root over the stack's
// socket. Without that access t fails, or under -short is skipped.
func grantDebezium(t testing.TB, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, filepath.Join(dir, "grant.sh")).CombinedOutput(); err != nil {
		if testing.Short() {
			t.Skipf("skipped under -short: a snapshot.locking.mode other than none needs RELOAD (grant.sh: %v: %s)", err, out)
		}
		t.Fatalf("bench/debezium/grant.sh (a snapshot.locking.mode other than none needs RELOAD): %v\n%s", err, out)
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func withoutPrefix(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// connectorStatus is Connect's GET /connectors/<name>/status.
type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

// status asks the worker for connector name's status; found is false while
// the worker does not know it (yet).
func (d *Debezium) status(ctx context.Context, name string) (s connectorStatus, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.RESTURL+"/connectors/"+name+"/status", nil)
	if err != nil {
		return s, false, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return s, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return s, false, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return s, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return s, false, fmt.Errorf("GET %s: %s: %s", req.URL.Path, resp.Status, body)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, false, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	return s, true, nil
}

// running says whether connector name and every task of it run; failed
// holds the trace of a FAILED one.
func (d *Debezium) running(ctx context.Context, name string) (ok bool, state, failed string) {
	s, found, err := d.status(ctx, name)
	switch {
	case err != nil:
		return false, err.Error(), ""
	case !found:
		return false, "not created yet", ""
	case s.Connector.State == "FAILED":
		return false, "FAILED", s.Connector.Trace
	}
	for _, task := range s.Tasks {
		if task.State == "FAILED" {
			return false, "FAILED", fmt.Sprintf("task %d: %s", task.ID, task.Trace)
		}
	}
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return false, fmt.Sprintf("connector %s, %d task(s)", s.Connector.State, len(s.Tasks)), ""
	}
	for _, task := range s.Tasks {
		if task.State != "RUNNING" {
			return false, fmt.Sprintf("task %d %s", task.ID, task.State), ""
		}
	}
	return true, "RUNNING", ""
}

// Healthy returns nil while the worker runs and every connector and task
// is RUNNING, and otherwise an error saying which is not (with a FAILED
// one's trace, or the end of the worker's log if it exited). A test
// waiting for records can call it in its condition to fail at once
// rather than at its deadline.
func (d *Debezium) Healthy(ctx context.Context) error {
	if d.Process.Exited() {
		return fmt.Errorf("the Debezium worker exited (%v); its log ends:\n%s", d.Process.Exit(), d.Process.Tail(30))
	}
	for _, c := range d.Connectors {
		if ok, state, trace := d.running(ctx, c.Name); !ok {
			return fmt.Errorf("debezium connector %s: %s %s", c.Name, state, trace)
		}
	}
	return nil
}

// waitStreaming waits until every connector and its task are RUNNING and
// its binlog client has connected, and fails t if the worker exits, a
// connector fails, or debeziumStartTimeout passes.
func (d *Debezium) waitStreaming(t testing.TB) {
	t.Helper()
	// Debezium's binlog client logs "Connected to binlog at <host>:<port>,
	// starting at <offset>" once it has connected, at the position the
	// schema snapshot read (BinlogStreamingChangeEventSource.onConnect).
	// The line comes from the client's own thread (blc-<host>:<port>, the
	// same for every connector); the offset names the captured table
	// (tableIds=[<database>.<table>]), which tells the connectors apart: n
	// connectors of one table need n such lines.
	tables := map[string]*regexp.Regexp{}
	want := map[string]int{}
	for _, c := range d.Connectors {
		table := c.Database + "." + c.Table
		tables[table] = regexp.MustCompile(`[\[ ,]` + regexp.QuoteMeta(table) + `[\],]`)
		want[table]++
	}
	connected := map[string]int{}
	var log logScanner
	ctx := context.Background()
	WaitFor(t, debeziumStartTimeout, "every Debezium connector streaming", func() (bool, string) {
		if d.Process.Exited() {
			d.mu.Lock()
			d.stopped = true // reported here, not again at the clean-up
			d.mu.Unlock()
			t.Fatalf("the Debezium worker exited before its connectors were streaming (%v); its log ends:\n%s", d.Process.Exit(), d.Process.Tail(40))
		}
		for _, line := range log.newLines(d.Process.LogPath) {
			if !strings.Contains(line, "Connected to binlog at") {
				continue
			}
			for table, re := range tables {
				if re.MatchString(line) {
					connected[table]++
				}
			}
		}
		var waiting []string
		for _, c := range d.Connectors {
			ok, state, trace := d.running(ctx, c.Name)
			if trace != "" {
				t.Fatalf("debezium connector %s FAILED: %s\nthe worker's log ends:\n%s", c.Name, trace, d.Process.Tail(40))
			}
			switch {
			case !ok:
				waiting = append(waiting, c.Name+": "+state)
			case connected[c.Database+"."+c.Table] < want[c.Database+"."+c.Table]:
				waiting = append(waiting, c.Name+": RUNNING, its binlog client not connected yet")
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; ")
	})
}

// logScanner reads a growing log file's complete new lines.
type logScanner struct {
	offset  int64
	partial []byte
}

func (s *logScanner) newLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	s.offset += int64(len(b))
	b = append(s.partial, b...)
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		s.partial = b
		return nil
	}
	s.partial = slices.Clone(b[end+1:])
	return strings.Split(string(b[:end]), "\n")
}

// Stop stops the worker with SIGTERM, as an operator would (offsets
// written, exit status 143), waits for it and says how it ended; a worker
// still running after a minute is killed. Calling it again returns the
// same. The test's end stops a worker not stopped before.
func (d *Debezium) Stop(t testing.TB) Exit {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopped {
		d.stopped = true
		if err := d.Process.Signal(syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		select {
		case <-d.Process.Done():
		case <-time.After(debeziumStopTimeout):
			t.Errorf("the Debezium worker (pid %d) still ran %v after SIGTERM: SIGKILL; its log ends:\n%s",
				d.Process.Pid(), debeziumStopTimeout, d.Process.Tail(30))
			d.Process.Kill(t)
		}
	}
	return d.Process.Exit()
}
