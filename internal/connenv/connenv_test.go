package connenv_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/internal/connenv"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store/mysql"
)

func getenv(env []string) func(string) string {
	return func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
}

// TestRoundTrip: what a drill hands a child process (KafkaEnv, MySQLEnv)
// is what the child reads back (Kafka, MySQL).
func TestRoundTrip(t *testing.T) {
	sec := kafka.Security{TLS: true, CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key", ServerName: "kafka.internal",
		SASLMechanism: "SCRAM-SHA-512", SASLUsername: "relay", SASLPasswordFile: "/run/secrets/kafka"}
	got, err := connenv.Kafka(getenv(connenv.KafkaEnv(sec)))
	if err != nil || got != sec {
		t.Errorf("Kafka(KafkaEnv(%#v)) = %#v, %v", sec, got, err)
	}
	o := mysql.ConnOptions{TLSMode: mysql.TLSVerifyCA, TLSCAFile: "/ca.pem", TLSCertFile: "/c.pem", TLSKeyFile: "/c.key",
		TLSServerName: "db.internal", Password: "s3cret"}
	if got := connenv.MySQL(getenv(connenv.MySQLEnv(o))); got != o {
		t.Errorf("MySQL(MySQLEnv(%+v)) = %+v", o, got)
	}
	if _, err := connenv.Kafka(getenv([]string{connenv.KafkaTLS + "=sometimes"})); err == nil || !strings.Contains(err.Error(), connenv.KafkaTLS) {
		t.Errorf("a bad %s gives %v, want an error naming it", connenv.KafkaTLS, err)
	}
}
