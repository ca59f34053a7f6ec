package drill_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestDrillOverSecuredConnections runs a drill with every connection
// secured, settings given as an operator would (flags and HERALD_*
// variables, secrets in files): the drill's clients, the relays, the
// orders API, the inventory consumer, the warehouse and kcat reach Kafka
// over SASL_SSL and MariaDB as the user that must use TLS. It passes as the
// plaintext drill does, and no secret shows in its output or in any
// process's log.
func TestDrillOverSecuredConnections(t *testing.T) {
	k := testenv.StackKafka(t)
	testenv.StackMySQLTLS(t, "herald")
	bin := binDir(t)
	dir := t.TempDir()
	var suffix [4]byte
	rand.Read(suffix[:])
	prefix := "herald_t_sdrill_" + hex.EncodeToString(suffix[:]) + "_"
	dropDatabases(t, prefix+"committed_relay_not_run")

	cfg, err := driver.ParseDSN(localstack.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = testenv.StackMySQLTLSUser, ""
	kafkaPassword := testenv.WriteSecret(t, "kafka-password", testenv.StackKafkaPassword)
	mysqlPassword := testenv.WriteSecret(t, "mysql-password", testenv.StackMySQLTLSPassword)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	report := filepath.Join(dir, "report.json")
	runDir := filepath.Join(dir, "run")
	// PLAIN over TLS: Debian's kcat, which verifies the topic, cannot do
	// SCRAM with Kafka 4 (verify.KcatConfig).
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "herald"), "drill", "--drill", "committed-relay-not-run",
		"--events", "30", "--rate", "20", "--lease", "3s", "--timeout", "30s", "--report", report, "--run-dir", runDir,
		"--db-prefix", prefix, "--mysql-dsn", cfg.FormatDSN(), "--mysql-tls", "verify-identity",
		"--kafka-brokers", strings.Join(k.SASLBrokers, ","), "--kafka-sasl-mechanism", "PLAIN",
		"--kafka-sasl-username", testenv.StackKafkaUser, "--kafka-sasl-password-file", kafkaPassword)
	cmd.Env = append(os.Environ(), kafka.EnvTLSCAFile+"="+k.CAFile, database.EnvTLSCAFile+"="+k.CAFile,
		database.EnvPasswordFile+"="+mysqlPassword)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald drill: %v\n%s", err, out.String())
	}
	t.Logf("secured drill took %v", time.Since(start).Round(time.Millisecond))

	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep drill.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != drill.VerdictPass || len(rep.Drills) != 1 {
		t.Fatalf("verdict %q with %d drills, want pass with 1\n%s", rep.Verdict, len(rep.Drills), out.String())
	}
	d := rep.Drills[0]
	if d.TopicRecords < d.Events || d.Lost != 0 || d.Reservations != d.Orders.Committed || d.Orders.Committed == 0 {
		t.Errorf("%d records for %d events, %d lost, %d reservations for %d orders",
			d.TopicRecords, d.Events, d.Lost, d.Reservations, d.Orders.Committed)
	}

	outputs := map[string]string{"drill output": out.String(), "report": string(b)}
	filepath.WalkDir(runDir, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				outputs[path] = string(b)
			}
		}
		return nil
	})
	for where, text := range outputs {
		for _, secret := range []string{testenv.StackKafkaPassword, testenv.StackMySQLTLSPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("secret %q shows in %s", secret, where)
			}
		}
	}
}
