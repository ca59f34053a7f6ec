package kafka_test

import (
	"strings"
	"testing"

	"github.com/herald-outbox/herald/kafka"
)

// getenv reads NAME=VALUE entries as a child process's os.Getenv would.
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

// TestSecurityEnvRoundTrip: what a drill hands a child process
// (SecurityEnv) is what the child reads back (SecurityFromEnv).
func TestSecurityEnvRoundTrip(t *testing.T) {
	sec := kafka.Security{TLS: true, CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key", ServerName: "kafka.internal",
		SASLMechanism: "SCRAM-SHA-512", SASLUsername: "relay", SASLPasswordFile: "/run/secrets/kafka"}
	got, err := kafka.SecurityFromEnv(getenv(kafka.SecurityEnv(sec)))
	if err != nil || got != sec {
		t.Errorf("SecurityFromEnv(SecurityEnv(%#v)) = %#v, %v", sec, got, err)
	}
	if _, err := kafka.SecurityFromEnv(getenv([]string{kafka.EnvTLS + "=sometimes"})); err == nil || !strings.Contains(err.Error(), kafka.EnvTLS) {
		t.Errorf("a bad %s gives %v, want an error naming it", kafka.EnvTLS, err)
	}
}
