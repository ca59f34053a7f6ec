package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestSecurityFlagErrors: a bad security flag or variable, or a file that
// cannot be used, stops every kind of command before it connects, with
// exit status 2 and a message naming the flag (or variable), the file and
// the problem.
func TestSecurityFlagErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := testenv.WriteSecret(t, "not.pem", "not a certificate")
	ca := testenv.NewCA(t, "test CA")
	expiredCert, expiredKey := ca.Issue(t, testenv.CertOptions{CommonName: "expired",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"unknown SASL mechanism", []string{"topics", "describe", "t", "--kafka-sasl-mechanism=GSSAPI", "--kafka-sasl-username=u"},
			[]string{kafka.EnvSASLPassword + "=x"}, []string{"--kafka-sasl-mechanism", "GSSAPI"}},
		{"SASL without a password", []string{"status", "--kafka-sasl-mechanism=SCRAM-SHA-512", "--kafka-sasl-username=u"}, nil,
			[]string{"--kafka-sasl-password-file", "password"}},
		{"password twice", []string{"relay", "--kafka-sasl-mechanism=PLAIN", "--kafka-sasl-username=u", "--kafka-sasl-password-file=" + notPEM},
			[]string{kafka.EnvSASLPassword + "=x"}, []string{kafka.EnvSASLPassword, "not both"}},
		{"missing CA file", []string{"topics", "create", "t", "--kafka-tls-ca-file=" + missing}, nil,
			[]string{"--kafka-tls-ca-file", missing, "no such file"}},
		{"CA file from the environment", []string{"replay", "--from=1h", "--checkpoint=c"}, []string{kafka.EnvTLSCAFile + "=" + notPEM},
			[]string{"--kafka-tls-ca-file", notPEM, "no PEM certificate"}},
		{"certificate without key", []string{"relay", "--kafka-tls-cert-file=" + notPEM}, nil, []string{"--kafka-tls-key-file", "both"}},
		{"expired client certificate", []string{"relay", "--kafka-tls-cert-file=" + expiredCert, "--kafka-tls-key-file=" + expiredKey}, nil,
			[]string{"--kafka-tls-cert-file", expiredCert, "expired on"}},
		{"bad HERALD_KAFKA_TLS", []string{"relay"}, []string{kafka.EnvTLS + "=maybe"}, []string{kafka.EnvTLS, "--kafka-tls"}},
		{"unknown MySQL TLS mode", []string{"migrate", "status", "--mysql-tls=required"}, nil, []string{"--mysql-tls", "required"}},
		{"missing MySQL password file", []string{"quarantine", "list", "--mysql-password-file=" + missing}, nil,
			[]string{"--mysql-password-file", missing, "no such file"}},
		{"MySQL CA that is not PEM", []string{"cleanup", "--retention=48h"}, []string{database.EnvTLSCAFile + "=" + notPEM},
			[]string{"--mysql-tls-ca-file", notPEM}},
		{"MySQL TLS flag with a PostgreSQL URL", []string{"migrate", "status", "--database-url=postgres://u@127.0.0.1:1/db",
			"--mysql-tls=verify-identity"}, nil, []string{"--mysql-tls", "MySQL only", "sslmode"}},
		{"MySQL TLS variable with a PostgreSQL URL", []string{"quarantine", "list"}, []string{"HERALD_DATABASE_URL=postgres://u@127.0.0.1:1/db",
			database.EnvTLSCAFile + "=" + notPEM}, []string{"--mysql-tls-ca-file", "MySQL only"}},
		{"missing password file with a PostgreSQL URL", []string{"cleanup", "--retention=48h", "--database-url=postgres://u@127.0.0.1:1/db",
			"--mysql-password-file=" + missing}, nil, []string{"--mysql-password-file", missing, "no such file"}},
		{"drill checks the files it hands on", []string{"drill", "--bin-dir=" + dir, "--kafka-tls-ca-file=" + missing}, nil,
			[]string{"--kafka-tls-ca-file", missing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kv := range tt.env {
				name, value, _ := strings.Cut(kv, "=")
				t.Setenv(name, value)
			}
			out, code := run(t, tt.args...)
			if code != exitUsage {
				t.Errorf("herald %v: exit %d, want %d; output:\n%s", tt.args, code, exitUsage, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("herald %v does not say %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
}

// TestCommandsOverSecuredConnections: topics and status work over the
// stack's SASL_SSL listener with the password in a file, and migrate as the
// database user that must use TLS; with a wrong password (the canary)
// status still reports the database, says what Kafka refused and exits 1,
// without the canary.
func TestCommandsOverSecuredConnections(t *testing.T) {
	k := testenv.StackKafka(t)
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	d := testenv.NewHeraldDatabase(t)
	dsn, mysqlOpts := testenv.StackMySQLTLS(t, d.Name)
	kafkaArgs := []string{"--kafka-brokers=" + strings.Join(k.SASLBrokers, ","), "--kafka-tls-ca-file=" + k.CAFile,
		"--kafka-sasl-mechanism=SCRAM-SHA-512", "--kafka-sasl-username=" + testenv.StackKafkaUser}
	mysqlArgs := []string{"--mysql-dsn=" + dsn, "--mysql-tls-ca-file=" + mysqlOpts.TLSCAFile, "--mysql-password-file=" + mysqlOpts.PasswordFile}
	good := testenv.WriteSecret(t, "kafka-password", testenv.StackKafkaPassword)

	out, code := run(t, append([]string{"topics", "describe", topic, "--kafka-sasl-password-file=" + good}, kafkaArgs...)...)
	if code != 0 || !strings.Contains(out, topic) {
		t.Errorf("topics describe over SASL_SSL: exit %d\n%s", code, out)
	}
	out, code = run(t, append(mysqlArgs, "migrate", "status")...)
	if code != 0 {
		t.Errorf("migrate status as %s over TLS: exit %d\n%s", testenv.StackMySQLTLSUser, code, out)
	}
	out, code = run(t, append(append([]string{"status", "--json", "--topics=" + topic, "--kafka-sasl-password-file=" + good}, kafkaArgs...), mysqlArgs...)...)
	var rep statusReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.KafkaError != "" || len(rep.Partitions) != 2 {
		t.Errorf("status over SASL_SSL and TLS: exit %d, %v, %+v\n%s", code, err, rep, out)
	}

	canary := testenv.Canary(t)
	t.Setenv(kafka.EnvSASLPassword, canary)
	out, code = run(t, append(append([]string{"status", "--json", "--topics=" + topic}, kafkaArgs...), mysqlArgs...)...)
	rep = statusReport{}
	decodeFirst(t, out, &rep)
	if code != 1 || rep.At.IsZero() || !strings.Contains(rep.KafkaError, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("status with a wrong password: exit %d, kafka_error %q; want exit 1, the database's part and Kafka's refusal\n%s",
			code, rep.KafkaError, out)
	}
	for _, secret := range []string{canary, testenv.StackKafkaPassword, testenv.StackMySQLTLSPassword} {
		if strings.Contains(out, secret) {
			t.Errorf("status --json shows secret %q:\n%s", secret, out)
		}
	}
}

// TestCommandsOverTLSToPostgres: migrate and quarantine list as the
// PostgreSQL role that must use TLS, the URL asking for it (sslmode
// verify-full against the stack's CA) and the password kept out of it, in
// --mysql-password-file or HERALD_MYSQL_PASSWORD; the password shows in no
// output.
func TestCommandsOverTLSToPostgres(t *testing.T) {
	d := testenv.NewHeraldDatabaseOn(t, testenv.PostgreSQL)
	tlsURL, opts := testenv.StackPostgresTLS(t, d.Name)
	out, code := run(t, "migrate", "status", "--database-url="+tlsURL, "--mysql-password-file="+opts.PasswordFile)
	if code != 0 || !strings.Contains(out, "00004") {
		t.Errorf("migrate status as %s over TLS, password in a file: exit %d\n%s", testenv.StackMySQLTLSUser, code, out)
	}
	t.Setenv(database.EnvPassword, testenv.StackMySQLTLSPassword)
	out2, code := run(t, "quarantine", "list", "--database-url="+tlsURL)
	if code != 0 {
		t.Errorf("quarantine list as %s over TLS, password in %s: exit %d\n%s", testenv.StackMySQLTLSUser, database.EnvPassword, code, out2)
	}
	for _, o := range []string{out, out2} {
		if strings.Contains(o, testenv.StackMySQLTLSPassword) {
			t.Errorf("output shows the password:\n%s", o)
		}
	}
}
