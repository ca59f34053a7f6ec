package herald_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// readmeCommand is how TestReadmeCommands treats one command line of the
// README's code blocks.
type readmeCommand struct {
	// run: run it as written (sh -c, from the repository root, herald on
	// the PATH) and want exit status 0.
	run bool
	// flags: a command for servers of your own; run it with --help
	// appended, which checks every flag name it uses without connecting.
	flags bool
	// skip says why the test does not run it.
	skip string
}

// readmeCommands are every command line of the README's code blocks
// (comments after " #" and line continuations removed). A README line
// missing here fails the test, so a new command cannot go untested.
var readmeCommands = map[string]readmeCommand{
	"make demo":                              {run: true},
	"make up":                                {run: true},
	"make test":                              {skip: "CI (.ci/run) runs it; from a test it would run this test again"},
	"make drill":                             {skip: "CI runs its drills (.ci/drills: beside make drill-postgres's)"},
	"make drill-postgres":                    {skip: "CI runs its drills (.ci/drills: beside make drill's)"},
	"make bench":                             {skip: "about 90 minutes, outside CI by design; bench/ has its own tests (cd bench && go test ./...)"},
	"make down":                              {skip: "stops the servers every other test needs; .ci/run starts them with make up"},
	"make reset":                             {skip: "wipes the servers every other test needs"},
	"go get github.com/herald-outbox/herald": {skip: "the module is not on a proxy this machine reaches; TestReadmeGoSnippet compiles the README's code against this checkout"},
	"herald topics create orders.v1":         {run: true},
	"herald relay --topic order=orders.v1 --cleanup-retention 168h":                               {run: true},
	"export HERALD_DATABASE_URL='app:secret@tcp(db.internal:3306)/app'":                           {skip: "names servers of your own"},
	"export HERALD_DATABASE_URL='postgres://app:secret@db.internal:5432/app?sslmode=verify-full'": {skip: "names servers of your own"},
	"export HERALD_KAFKA_BROKERS='kafka-1:9092,kafka-2:9092'":                                     {skip: "names servers of your own"},
	"herald relay --kafka-brokers b-1:9096 --kafka-tls-ca-file ca.pem --kafka-sasl-mechanism SCRAM-SHA-512 --kafka-sasl-username relay --kafka-sasl-password-file /run/secrets/kafka --database-url 'relay@tcp(db:3306)/app' --mysql-tls-ca-file db-ca.pem --mysql-password-file /run/secrets/db": {flags: true},
	"herald relay ... --database-url 'postgres://relay@db:5432/app?sslmode=verify-full&sslrootcert=db-ca.pem' --mysql-password-file /run/secrets/db":                                                                                                                                              {flags: true},
}

// readmeCodeLines returns the command lines of the README's indented code
// blocks (not the fenced Go block, nor the layout tree).
func readmeCodeLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fenced, pending := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "    ") {
			continue
		}
		code := strings.TrimSpace(line)
		if i := strings.Index(code, " #"); i >= 0 {
			code = strings.TrimSpace(code[:i])
		}
		if code == "" || strings.HasPrefix(code, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(code, "\\"); ok {
			pending += strings.TrimSpace(cont) + " "
			continue
		}
		code, pending = pending+code, ""
		first := strings.Fields(code)[0]
		if slices.Contains([]string{"make", "herald", "go", "export"}, first) {
			out = append(out, code)
		}
	}
	return out
}

// TestReadmeCommands runs the README's commands as a newcomer would, in
// its order, against the local stack: make up, the demo (20 s, as the
// README suggests), herald migrate up, topics create, a relay until it is
// ready. Every other command line of the README is checked for its flags
// or named with the reason it is not run.
func TestReadmeCommands(t *testing.T) {
	testenv.KafkaBrokers(t) // fails (or skips under -short) without the stack
	// The README's commands use the defaults (database herald, orders.v1,
	// 127.0.0.1:9101), which internal/cli's TestRelayRunsOnItsDefaults
	// uses too, maybe in another test process at the same time.
	testenv.LockStackDefaults(t)
	lines := readmeCodeLines(t)
	for _, line := range lines {
		if _, ok := readmeCommands[line]; !ok {
			t.Errorf("README command %q: not in readmeCommands (run it, check its flags, or say why not)", line)
		}
	}
	for line := range readmeCommands {
		if !slices.Contains(lines, line) {
			t.Errorf("readmeCommands lists %q, which the README no longer has", line)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	bin := filepath.Dir(testenv.HeraldBinary(t))
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HERALD_") {
			env = append(env, kv)
		}
	}
	shell := func(ctx context.Context, line string, extra ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Env = append(slices.Clone(env), extra...)
		return cmd
	}
	// orders.v1 is the README's topic: made afresh, so its settings are
	// this run's (the stack's layout may have changed since the last).
	admin := testenv.NewAdmin(t, testenv.KafkaBrokers(t))
	deleteTopic(t, admin, "orders.v1")
	// Gone before the defaults' lock is released: the next holder may
	// create it at once.
	t.Cleanup(func() { deleteTopic(t, admin, "orders.v1") })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, line := range []string{"make up", "make demo", "herald migrate up", "herald topics create orders.v1"} {
		var extra []string
		if line == "make demo" {
			extra = []string{"DEMO_DURATION=20s"} // as the README suggests for a shorter run
		}
		start := time.Now()
		out, err := shell(ctx, line, extra...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		t.Logf("%s: %v", line, time.Since(start).Round(time.Millisecond))
		if line == "make demo" && !regexp.MustCompile(`verified +0 lost, 0 ghosts, 0 out of order, 0 double effects`).Match(out) {
			t.Errorf("make demo did not verify a clean run:\n%s", out)
		}
	}

	relayLine := "herald relay --topic order=orders.v1 --cleanup-retention 168h"
	relay := shell(ctx, "exec "+relayLine)
	var log strings.Builder
	relay.Stdout, relay.Stderr = &log, &log
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	ready := false
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !ready; {
		if resp, err := http.Get("http://127.0.0.1:9101/readyz"); err == nil {
			resp.Body.Close()
			ready = resp.StatusCode == http.StatusOK
		}
		if !ready {
			<-time.After(200 * time.Millisecond)
		}
	}
	relay.Process.Signal(syscall.SIGTERM)
	err := relay.Wait()
	if !ready {
		t.Errorf("%s: not ready within a minute on 127.0.0.1:9101\n%s", relayLine, log.String())
	}
	if err != nil {
		t.Errorf("%s: after SIGTERM: %v\n%s", relayLine, err, log.String())
	}

	for line, c := range readmeCommands {
		if c.flags {
			if out, err := shell(ctx, line+" --help").CombinedOutput(); err != nil {
				t.Errorf("%s --help: %v\n%s", line, err, out)
			}
		}
	}
}

// deleteTopic deletes topic and waits until the metadata no longer lists
// it: Kafka deletes a topic after answering, and a create of the same
// name meanwhile finds the old one.
func deleteTopic(t *testing.T, admin *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete topic %s: %v", topic, err)
		return
	}
	testenv.WaitFor(t, 30*time.Second, "topic "+topic+" deleted", func() (bool, string) {
		topics, err := admin.ListTopics(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td, listed := topics[topic]
		return !listed || errors.Is(td.Err, kerr.UnknownTopicOrPartition), fmt.Sprintf("still listed (%v)", td.Err)
	})
}

// readmeProgram wraps the README's Go snippet into a program that runs it
// on the database named by its argument and prints the event ids.
const readmeProgram = `package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store/mysql"
)

func main() {
	ctx := context.Background()
	db, err := mysql.Open(ctx, os.Args[1])
	if err != nil {
		panic(err)
	}
	ids, err := snippet(ctx, db)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(ids)
	fmt.Println(string(out))
}

func snippet(ctx context.Context, db *sql.DB) ([]string, error) {
%s
	if err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}
`

// TestReadmeGoSnippet compiles the README's Go snippet as written (in a
// function that commits its transaction) and runs it on a migrated
// database with an orders table: the order row and its event both exist.
func TestReadmeGoSnippet(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("README has no ```go block")
	}
	d := testenv.NewHeraldDatabase(t)
	d.Exec(t, "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer_id BIGINT NOT NULL, total_amount DECIMAL(12,2) NOT NULL)")

	// The program goes in through an overlay: nothing is written into the
	// checkout.
	dir := t.TempDir()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, fmt.Appendf(nil, readmeProgram, m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, "internal", "readmesnippet", "main.go"): src}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "run", "-overlay", overlayFile, "./internal/readmesnippet", d.DSN).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's snippet:\n%s\n%v\n%s", m[1], err, out)
	}
	var ids []string
	if err := json.Unmarshal(out, &ids); err != nil || len(ids) != 1 {
		t.Fatalf("the snippet printed %s (%v), want one event id", out, err)
	}
	if n := d.Count(t, "SELECT COUNT(*) FROM orders"); n != 1 {
		t.Errorf("%d orders, want 1", n)
	}
	var agg, payload string
	if err := d.DB.QueryRow("SELECT aggregate_id, payload FROM outbox_events WHERE id = ?", ids[0]).Scan(&agg, &payload); err != nil {
		t.Fatalf("the event %s: %v", ids[0], err)
	}
	var orderID string
	d.DB.QueryRow("SELECT CAST(id AS CHAR) FROM orders").Scan(&orderID)
	if agg != orderID || !strings.Contains(payload, `"customer_id": 42`) && !strings.Contains(payload, `"customer_id":42`) {
		t.Errorf("event of aggregate %q with payload %s, want order %s's", agg, payload, orderID)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBuilt()
	os.Exit(code)
}
