package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// securedEnv is env with the relays on the stack's secured side: Kafka
// over a secured listener, the database as the user that must use TLS,
// its password in a file.
type securedEnv struct {
	*env
	kafka     testenv.SecuredKafka
	dsn       string
	mysqlOpts mysql.ConnOptions
	// secrets must never show in anything the relay or herald status
	// writes.
	secrets []string
}

func newSecuredEnv(t *testing.T) *securedEnv {
	t.Helper()
	k := testenv.StackKafka(t)
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	dsn, opts := testenv.StackMySQLTLS(t, e.db.Name)
	return &securedEnv{env: e, kafka: k, dsn: dsn, mysqlOpts: opts,
		secrets: []string{testenv.StackKafkaPassword, testenv.StackMySQLTLSPassword}}
}

// relay starts `herald relay` on brokers with sec, its settings in the
// environment as an operator would give them.
func (s *securedEnv) relay(t *testing.T, name string, brokers []string, sec kafka.Security) *testenv.Process {
	t.Helper()
	return testenv.StartRelay(t, testenv.RelayOptions{
		Name: name, DSN: s.dsn, Brokers: brokers, Topics: map[string]string{"order": s.topic}, BatchSize: 20,
		Env: append(append(kafka.SecurityEnv(sec), database.ConnOptionsEnv(s.mysqlOpts)...),
			"HERALD_POLL_INTERVAL=50ms", "HERALD_BACKOFF_BASE=100ms"),
	})
}

// verifySecured reads the topic with kcat over the listener of reader and
// checks it against the outbox: every event, in order per aggregate.
func (s *securedEnv) verifySecured(t *testing.T, brokers []string, reader kafka.Security) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows, err := verify.LoadOutbox(ctx, s.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	records, err := verify.ReadSecuredTopic(ctx, brokers, reader, s.topic)
	if err != nil {
		t.Fatal(err)
	}
	report := verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records})
	t.Logf("independent check (kcat, %s): %s", reader.Protocol(), report.Summary())
	if !report.OK() {
		t.Errorf("topic %s does not match the outbox:\n%s", s.topic, strings.Join(report.Problems(10), "\n"))
	}
}

// kcatReader is how kcat reads what a relay wrote with sec: the same
// listener and settings, except that SCRAM becomes PLAIN for the same user
// (Debian 12's librdkafka 2.0.2 cannot do SCRAM with Kafka 4; see
// verify.KcatConfig).
func kcatReader(sec kafka.Security) kafka.Security {
	if strings.HasPrefix(sec.Mechanism(), "SCRAM") {
		sec.SASLMechanism = kafka.SASLPlain
	}
	return sec
}

// withPasswordFile moves sec's password into a file, as an operator would.
func withPasswordFile(t *testing.T, sec kafka.Security) kafka.Security {
	t.Helper()
	if sec.SASLPassword != "" {
		sec.SASLPasswordFile = testenv.WriteSecret(t, "kafka-password", sec.SASLPassword)
		sec.SASLPassword = ""
	}
	return sec
}

// TestRelayOverSecuredListeners: a relay publishes over SASL_SSL with each
// SASL mechanism and over mutual TLS, reading the database over TLS as a
// REQUIRE SSL user; kcat reads every event back over the same listener,
// in order per aggregate. No secret shows in the relay's log.
func TestRelayOverSecuredListeners(t *testing.T) {
	k := testenv.StackKafka(t)
	tests := []struct {
		name    string
		brokers []string
		sec     kafka.Security
	}{
		{"SASL_SSL SCRAM-SHA-512", k.SASLBrokers, k.SCRAM(kafka.SASLScramSHA512)},
		{"SASL_SSL SCRAM-SHA-256", k.SASLBrokers, k.SCRAM(kafka.SASLScramSHA256)},
		{"SASL_SSL PLAIN", k.SASLBrokers, k.SCRAM(kafka.SASLPlain)},
		{"mutual TLS", k.SSLBrokers, k.MutualTLS()},
		{"mutual TLS, broker name given", k.SSLBrokers, func() kafka.Security {
			s := k.MutualTLS()
			s.ServerName = "kafka.herald.test" // in the brokers' certificate, not the dialled 127.0.0.1
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSecuredEnv(t)
			s.preload(t, 200, 20)
			sec := withPasswordFile(t, tt.sec)
			p := s.relay(t, "relay-secured", tt.brokers, sec)
			s.waitDrained(t, time.Minute)
			stop(t, p)
			s.verifySecured(t, tt.brokers, kcatReader(tt.sec))
			if strings.Contains(p.Log(), "configuration failure") {
				t.Errorf("a configuration failure was reported:\n%s", p.Tail(20))
			}
			assertNoSecrets(t, s.secrets, map[string]string{"relay log": p.Log()})
		})
	}
}

// TestRelayConfigurationFailures: a wrong SASL password, a client
// certificate from another CA, a plaintext client on the TLS listener and
// an ACL that denies the topic each stop the relay with one clear error:
// /readyz not ready and saying why, the metric set, no event quarantined
// or charged an attempt. Once the configuration is fixed (the password
// file or the certificate files rewritten in place, the relay restarted
// with TLS, the ACL granted) every event arrives, in order. Neither the
// canary (the wrong password) nor the real secrets show in the log,
// /readyz, /metrics, last_error, the failure log or `herald status --json`.
func TestRelayConfigurationFailures(t *testing.T) {
	t.Run("wrong SASL password", func(t *testing.T) {
		s := newSecuredEnv(t)
		canary := testenv.Canary(t)
		sec := s.kafka.SCRAM(kafka.SASLScramSHA512)
		sec.SASLPassword, sec.SASLPasswordFile = "", testenv.WriteSecret(t, "kafka-password", canary)
		s.secrets = append(s.secrets, canary)
		s.preload(t, 60, 6)
		p := s.relay(t, "relay-wrong-password", s.kafka.SASLBrokers, sec)
		seen := s.awaitConfigurationFailure(t, p, kafka.ClassAuthentication, s.kafka.SASLBrokers, sec)
		writeFile(t, sec.SASLPasswordFile, testenv.StackKafkaPassword+"\n") // read at the next connection
		s.awaitRecovery(t, p, s.kafka.SASLBrokers, kcatReader(s.kafka.SCRAM(kafka.SASLScramSHA512)), seen, 1)
	})

	t.Run("client certificate from another CA", func(t *testing.T) {
		s := newSecuredEnv(t)
		rogue := testenv.NewCA(t, "not the stack's CA")
		cert, key := rogue.Issue(t, testenv.CertOptions{CommonName: testenv.StackKafkaUser})
		// One file with the certificate and its key, as certificate
		// managers write them.
		combined := filepath.Join(t.TempDir(), "client-combined.pem")
		writeFile(t, combined, readFile(t, cert)+readFile(t, key))
		sec := s.kafka.MutualTLS()
		sec.CertFile, sec.KeyFile = combined, combined
		s.preload(t, 60, 6)
		p := s.relay(t, "relay-rogue-cert", s.kafka.SSLBrokers, sec)
		seen := s.awaitConfigurationFailure(t, p, kafka.ClassTLS, s.kafka.SSLBrokers, sec)
		// Renewed in place (write, then rename), as a certificate manager
		// would: read at the next handshake.
		writeFile(t, combined+".new", readFile(t, s.kafka.CertFile)+readFile(t, s.kafka.KeyFile))
		if err := os.Rename(combined+".new", combined); err != nil {
			t.Fatal(err)
		}
		s.awaitRecovery(t, p, s.kafka.SSLBrokers, s.kafka.MutualTLS(), seen, 1)
	})

	t.Run("plaintext client on the TLS listener", func(t *testing.T) {
		s := newSecuredEnv(t)
		s.preload(t, 60, 6)
		p := s.relay(t, "relay-plaintext", s.kafka.SSLBrokers, kafka.Security{})
		seen := s.awaitConfigurationFailure(t, p, kafka.ClassTLS, s.kafka.SSLBrokers, kafka.Security{})
		stop(t, p)
		seen["first relay's log"] = p.Log()
		fixed := s.relay(t, "relay-with-tls", s.kafka.SSLBrokers, s.kafka.MutualTLS())
		if n := strings.Count(p.Log(), "publishing stopped by a Kafka configuration failure"); n != 1 {
			t.Errorf("the failure was logged %d times, want once:\n%s", n, p.Log())
		}
		s.awaitRecovery(t, fixed, s.kafka.SSLBrokers, s.kafka.MutualTLS(), seen, 0)
	})

	t.Run("topic write denied by an ACL", func(t *testing.T) {
		s := newSecuredEnv(t)
		// A topic outside the user's prefix: the ACLs deny it.
		s.topic = testenv.NewTopic(t, s.brokers, testenv.TopicOptions{Partitions: 3, Prefix: "denied-t-"})
		sec := withPasswordFile(t, s.kafka.SCRAM(kafka.SASLScramSHA512))
		s.preload(t, 60, 6)
		p := s.relay(t, "relay-denied", s.kafka.SASLBrokers, sec)
		seen := s.awaitConfigurationFailure(t, p, kafka.ClassAuthorization, s.kafka.SASLBrokers, sec)
		testenv.WaitFor(t, 30*time.Second, "events released with the failure recorded", func() (bool, string) {
			n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE error_class = 'authorization'")
			return n > 0, fmt.Sprintf("%d events with error_class authorization", n)
		})
		grantWrite(t, s.brokers, s.topic)
		s.awaitRecovery(t, p, s.kafka.SASLBrokers, kcatReader(s.kafka.SCRAM(kafka.SASLScramSHA512)), seen, 1)
	})
}

// awaitConfigurationFailure waits until the relay reports a configuration
// failure of class on /readyz and /metrics, checks that no event was
// quarantined or charged for it, and returns what it saw (to be checked
// for secrets).
func (s *securedEnv) awaitConfigurationFailure(t *testing.T, p *testenv.Process, class string, brokers []string, sec kafka.Security) map[string]string {
	t.Helper()
	addr := metricsAddr(t, p)
	var body string
	testenv.WaitFor(t, time.Minute, "/readyz reporting the "+class+" failure", func() (bool, string) {
		var code int
		code, body = get("http://" + addr + "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "kafka "+class+" failure"),
			fmt.Sprintf("%d %s; log tail:\n%s", code, body, p.Tail(5))
	})
	_, metrics := get("http://" + addr + "/metrics")
	if want := `herald_relay_configuration_failure{class="` + class + `"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics has no %s", want)
	}
	// Let it retry a few times: still nothing charged to the events.
	p.WaitForLog(t, "publishing stopped by a Kafka configuration failure", 30*time.Second)
	s.assertNothingCharged(t)
	return map[string]string{
		"/readyz": body, "/metrics": metrics, "herald status --json": s.statusJSON(t, brokers, sec),
	}
}

// assertNothingCharged: no event quarantined, none with a failed attempt
// counted, nothing in the failure log.
func (s *securedEnv) assertNothingCharged(t *testing.T) {
	t.Helper()
	if n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE quarantined_at IS NOT NULL"); n > 0 {
		t.Errorf("%d events quarantined for a configuration failure", n)
	}
	if n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_failures"); n > 0 {
		t.Errorf("%d failures logged against events for a configuration failure", n)
	}
	if n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NULL AND attempts > 0"); n > 0 {
		t.Errorf("%d unpublished events were charged an attempt", n)
	}
}

// awaitRecovery waits until every event is published once the
// configuration is fixed, then checks readiness, the metric, the log
// (failuresLogged reports of the failure, none per event), the topic in
// order, and that no secret shows in anything seen.
func (s *securedEnv) awaitRecovery(t *testing.T, p *testenv.Process, brokers []string, reader kafka.Security, seen map[string]string, failuresLogged int) {
	t.Helper()
	s.waitDrained(t, time.Minute)
	addr := metricsAddr(t, p)
	testenv.WaitFor(t, 30*time.Second, "/readyz ready again", func() (bool, string) {
		code, body := get("http://" + addr + "/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	_, metrics := get("http://" + addr + "/metrics")
	if failing := regexp.MustCompile(`herald_relay_configuration_failure\{class="[a-z]+"\} 1`).FindString(metrics); failing != "" {
		t.Errorf("/metrics still reports %s", failing)
	}
	stop(t, p)
	s.assertNothingCharged(t)
	s.verifySecured(t, brokers, reader)

	log := p.Log()
	if n := strings.Count(log, "publishing stopped by a Kafka configuration failure"); n != failuresLogged {
		t.Errorf("the failure was logged %d times, want %d:\n%s", n, failuresLogged, log)
	}
	if strings.Contains(log, "publish failed") {
		t.Errorf("events were reported failed one by one:\n%s", log)
	}
	lastErrors := strings.Join(s.db.Strings(t, "SELECT COALESCE(last_error, '') FROM outbox_events"), "\n")
	seen["relay log"], seen["/metrics after the fix"], seen["last_error"] = log, metrics, lastErrors
	assertNoSecrets(t, s.secrets, seen)
}

// statusJSON runs `herald status --json` with the relay's settings. With
// settings Kafka refuses it still reports the database, and exits 1.
func (s *securedEnv) statusJSON(t *testing.T, brokers []string, sec kafka.Security) string {
	t.Helper()
	env := append(append(kafka.SecurityEnv(sec), database.ConnOptionsEnv(s.mysqlOpts)...),
		"HERALD_MYSQL_DSN="+s.dsn, "HERALD_KAFKA_BROKERS="+strings.Join(brokers, ","), "HERALD_STATUS_TOPICS="+s.topic)
	p := testenv.StartProcess(t, testenv.ProcessOptions{
		Name: "herald-status", Path: testenv.HeraldBinary(t), Args: []string{"status", "--json"},
		Env: env, DropEnv: []string{"HERALD_"},
	})
	exit := p.Wait(t, time.Minute)
	var rep struct {
		Backlog    json.RawMessage `json:"backlog"`
		KafkaError string          `json:"kafka_error"`
	}
	if err := json.NewDecoder(strings.NewReader(p.Log())).Decode(&rep); err != nil || rep.Backlog == nil {
		t.Fatalf("herald status: %v, no report (%v)\n%s", exit, err, p.Log())
	}
	want := 0
	if rep.KafkaError != "" {
		want = 1
	}
	if exit.Code != want {
		t.Fatalf("herald status: %v, want exit %d (kafka_error %q)\n%s", exit, want, rep.KafkaError, p.Log())
	}
	return p.Log()
}

// assertNoSecrets fails t for every secret found in any of outputs.
func assertNoSecrets(t *testing.T, secrets []string, outputs map[string]string) {
	t.Helper()
	for where, out := range outputs {
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("secret %q shows in %s", secret, where)
			}
		}
	}
}

var metricsAddrRE = regexp.MustCompile(`"metrics_addr":"([^"]+)"`)

// metricsAddr is where the relay serves /readyz and /metrics.
func metricsAddr(t *testing.T, p *testenv.Process) string {
	t.Helper()
	p.WaitForLog(t, `"metrics_addr"`, 30*time.Second)
	return metricsAddrRE.FindStringSubmatch(p.Log())[1]
}

// grantWrite lets the stack's user write (and read back) topic, as the
// plaintext super user, until t ends.
func grantWrite(t *testing.T, brokers []string, topic string) {
	t.Helper()
	adm := testenv.NewAdmin(t, brokers)
	acl := kadm.NewACLs().Allow("User:"+testenv.StackKafkaUser).AllowHosts().
		Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpRead)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, acl)
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("grant write on %s: %v", topic, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		del := kadm.NewACLs().Allow("User:"+testenv.StackKafkaUser).AllowHosts().
			Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpRead)
		if _, err := adm.DeleteACLs(ctx, del); err != nil {
			t.Logf("delete the ACL of %s: %v", topic, err)
		}
	})
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
