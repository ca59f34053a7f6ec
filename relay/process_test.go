package relay_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/localstack"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestRelayRejectsBadConfiguration: `herald relay` with a bad flag or a bad
// HERALD_* value exits 2 before touching a server, naming the flag (and the
// variable).
func TestRelayRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string // substrings of stderr
	}{
		{"unknown flag", []string{"--no-such-flag"}, nil, []string{"--no-such-flag"}},
		{"batch size out of range", []string{"--batch-size=20000"}, nil, []string{"--batch-size", "1..10000"}},
		{"negative lease", []string{"--lease=-5s"}, nil, []string{"--lease", "at least 1s"}},
		{"unparsable duration flag", []string{"--lease=soon"}, nil, []string{"--lease", "soon"}},
		{"unparsable environment value", nil, []string{"HERALD_BATCH_SIZE=many"}, []string{"HERALD_BATCH_SIZE", "--batch-size"}},
		{"lease too short from the environment", nil, []string{"HERALD_LEASE=500ms"}, []string{"--lease", "at least 1s"}},
		{"unknown order policy", nil, []string{"HERALD_ORDER_POLICY=fifo"}, []string{"--order-policy", "fifo"}},
		{"topic route without =", []string{"--topic=orders"}, nil, []string{"--topic", "aggregate_type=topic"}},
		{"no brokers", nil, []string{"HERALD_KAFKA_BROKERS= , "}, []string{"--kafka-brokers"}},
		{"bad compression", []string{"--compression=brotli"}, nil, []string{"--compression", "brotli"}},
		{"unparsable DSN", []string{"--mysql-dsn=not a dsn"}, nil, []string{"--mysql-dsn"}},
		{"bad metrics address", nil, []string{"HERALD_METRICS_ADDR=nowhere"}, []string{"--metrics-addr"}},
		{"unknown failpoint", nil, []string{"HERALD_FAILPOINTS=relay.nowhere=crash"}, []string{"HERALD_FAILPOINTS", "relay.nowhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{
				"HERALD_MYSQL_DSN=" + localstack.MySQLDSN(),
				"HERALD_KAFKA_BROKERS=" + strings.Join(localstack.KafkaBrokers(), ","),
			}, tt.env...)
			p := testenv.StartProcess(t, testenv.ProcessOptions{
				Name: "herald-relay", Path: testenv.HeraldBinary(t), Args: append([]string{"relay"}, tt.args...),
				Env: env, DropEnv: []string{"HERALD_"},
			})
			exit := p.Wait(t, 15*time.Second)
			out := p.Log()
			if exit.Code != 2 {
				t.Errorf("%v, want exit status 2; output:\n%s", exit, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "relay started") {
				t.Errorf("the relay started despite the bad configuration:\n%s", out)
			}
		})
	}
}

// TestSigtermFinishesTheBatch: SIGTERM reaches a relay in the middle of a
// batch (relay.before_publish=sleep(3s) holds it between claim and
// produce). The relay publishes and marks that batch, claims no other,
// frees its buckets for the other relays (nobody waits for its lease to
// expire) and exits 0.
func TestSigtermFinishesTheBatch(t *testing.T) {
	e := newEnv(t, testenv.TopicOptions{Partitions: 3})
	e.preload(t, 300, 30)
	p := e.relay(t, testenv.RelayOptions{Name: "relay-term", BatchSize: 100, Lease: 30 * time.Second,
		Failpoints: "relay.before_publish=sleep(3s)"})

	// The first claim is counted before the failpoint holds the batch.
	p.WaitForMetric(t, "herald_relay_claims_total", 30*time.Second, "first batch claimed", func(v float64) bool { return v >= 1 })
	if owned := e.db.Count(t, "SELECT COUNT(*) FROM outbox_buckets WHERE owner = 'relay-term'"); owned != 64 {
		t.Fatalf("the relay owns %d buckets, want all 64", owned)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit := p.Wait(t, 30*time.Second); exit.Code != 0 {
		t.Fatalf("%v after SIGTERM, want exit status 0\n%s", exit, p.Tail(20))
	}
	if !strings.Contains(p.Log(), "relay stopped") {
		t.Errorf("no clean stop logged:\n%s", p.Tail(10))
	}
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_buckets WHERE owner IS NOT NULL"); n > 0 {
		t.Errorf("%d buckets still owned by the stopped relay: the others would wait for its lease", n)
	}
	if n := e.db.Count(t, "SELECT COUNT(*) FROM outbox_relays"); n > 0 {
		t.Errorf("the stopped relay is still a member")
	}
	published := e.db.Count(t, "SELECT COUNT(*) FROM outbox_events WHERE published_at IS NOT NULL")
	if published != 100 {
		t.Errorf("%d events published, want the 100 of the batch in flight only", published)
	}
	t.Logf("batch of 100 finished after SIGTERM; %d events left for the next relay", 300-published)
	e.verifyTopic(t, func(r verify.Row) bool { return r.Published }, nil)
}
