package relay_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestBackingOffRelayKeepsItsLeases: a relay whose every iteration fails
// (a wrong SASL password: a configuration failure, after which its loop
// backs off for longer and longer, up to 10 s) is alive, so it keeps its
// leases for three leases and more: the buckets it owns beside a healthy
// relay keep their owner and epoch, and of two binlog relays failing alike
// the leader keeps the stream lease (no epoch change, no hand-over back
// and forth). EXPIRED means dead or hung (docs/runbooks/backlog.md).
func TestBackingOffRelayKeepsItsLeases(t *testing.T) {
	t.Parallel() // relays run as processes on databases and topics of their own
	const lease = 3 * time.Second
	const watch = 3*lease + lease/2

	t.Run("buckets beside a healthy relay", func(t *testing.T) {
		t.Parallel()
		s := newSecuredEnv(t)
		s.preload(t, 40, 8)
		failing := s.leasedRelay(t, "relay-failing", s.wrongPassword(t), lease)
		healthy := s.leasedRelay(t, "relay-healthy", withPasswordFile(t, s.kafka.SCRAM(kafka.SASLScramSHA512)), lease)
		testenv.WaitFor(t, time.Minute, "both relays owning half of the buckets", func() (bool, string) {
			f, h := s.bucketsOf(t, "relay-failing"), s.bucketsOf(t, "relay-healthy")
			return len(f) == 32 && len(h) == 32, fmt.Sprintf("failing %d, healthy %d", len(f), len(h))
		})
		failing.WaitForLog(t, "publishing stopped by a Kafka configuration failure", 30*time.Second)
		held := s.bucketsOf(t, "relay-failing")
		s.watchFor(t, watch, func() string {
			now := s.bucketsOf(t, "relay-failing")
			if fmt.Sprint(now) != fmt.Sprint(held) {
				return fmt.Sprintf("the failing relay's buckets (bucket:epoch) changed from %v to %v", held, now)
			}
			if n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_buckets WHERE owner = 'relay-failing' AND expires_at <= UTC_TIMESTAMP(6)"); n > 0 {
				return fmt.Sprintf("%d of the failing relay's bucket leases expired while it lived", n)
			}
			return ""
		})
		for _, p := range []*testenv.Process{failing, healthy} {
			if strings.Contains(p.Log(), "took over buckets") {
				t.Errorf("%s took over buckets of a live relay:\n%s", p.Name, p.Tail(20))
			}
		}
	})

	t.Run("stream lease of two binlog relays", func(t *testing.T) {
		t.Parallel()
		s := newSecuredEnv(t)
		s.preload(t, 40, 8)
		sec := s.wrongPassword(t)
		first := s.leasedRelay(t, "stream-a", sec, lease, "HERALD_SOURCE=binlog")
		second := s.leasedRelay(t, "stream-b", sec, lease, "HERALD_SOURCE=binlog")
		var leader string
		var epoch int64
		testenv.WaitFor(t, time.Minute, "a stream leader", func() (bool, string) {
			leader, epoch = s.streamLeader(t)
			return leader != "", "no leader yet"
		})
		for _, p := range []*testenv.Process{first, second} {
			if p.Name == leader {
				p.WaitForLog(t, "publishing stopped by a Kafka configuration failure", 30*time.Second)
			}
		}
		s.watchFor(t, watch, func() string {
			if l, e := s.streamLeader(t); l != leader || e != epoch {
				return fmt.Sprintf("the stream lease moved from %s (epoch %d) to %s (epoch %d)", leader, epoch, l, e)
			}
			if n := s.db.Count(t, "SELECT COUNT(*) FROM outbox_stream WHERE expires_at <= UTC_TIMESTAMP(6)"); n > 0 {
				return "the stream lease expired while its leader lived"
			}
			return ""
		})
	})
}

// wrongPassword is the stack's SCRAM user with a wrong password in a file.
func (s *securedEnv) wrongPassword(t *testing.T) kafka.Security {
	t.Helper()
	canary := testenv.Canary(t)
	sec := s.kafka.SCRAM(kafka.SASLScramSHA512)
	sec.SASLPassword, sec.SASLPasswordFile = "", testenv.WriteSecret(t, "kafka-password", canary)
	return sec
}

// leasedRelay starts `herald relay` on the SASL listener with sec and a
// short lease.
func (s *securedEnv) leasedRelay(t *testing.T, name string, sec kafka.Security, lease time.Duration, env ...string) *testenv.Process {
	t.Helper()
	return testenv.StartRelay(t, testenv.RelayOptions{
		Name: name, DSN: s.dsn, Brokers: s.kafka.SASLBrokers, Topics: map[string]string{"order": s.topic},
		Lease: lease, BatchSize: 20,
		Env: append(append(append(kafka.SecurityEnv(sec), database.ConnOptionsEnv(s.mysqlOpts)...),
			"HERALD_POLL_INTERVAL=50ms"), env...),
	})
}

// bucketsOf lists relayID's buckets as bucket:epoch, by bucket.
func (s *securedEnv) bucketsOf(t *testing.T, relayID string) []string {
	t.Helper()
	return s.db.Strings(t, "SELECT CONCAT(bucket, ':', epoch) FROM outbox_buckets WHERE owner = ? ORDER BY bucket", relayID)
}

// streamLeader reads the stream lease's holder and epoch.
func (s *securedEnv) streamLeader(t *testing.T) (string, int64) {
	t.Helper()
	var leader *string
	var epoch int64
	if err := s.db.DB.QueryRow("SELECT leader, epoch FROM outbox_stream WHERE id = 1").Scan(&leader, &epoch); err != nil || leader == nil {
		return "", 0
	}
	return *leader, epoch
}

// watchFor checks broken every 100 ms for d and fails the test with the
// first problem it reports.
func (s *securedEnv) watchFor(t *testing.T, d time.Duration, broken func() string) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		if problem := broken(); problem != "" {
			t.Fatal(problem)
		}
	}
}
