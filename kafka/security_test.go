package kafka_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestSecurityValidate: each bad combination is reported at once, naming
// its field.
func TestSecurityValidate(t *testing.T) {
	tests := []struct {
		name   string
		sec    kafka.Security
		fields []string // fields named, in order; none: valid
	}{
		{"zero value is plaintext", kafka.Security{}, nil},
		{"TLS with system roots", kafka.Security{TLS: true}, nil},
		{"SCRAM over TLS", kafka.Security{CAFile: "ca.pem", SASLMechanism: "scram-sha-512", SASLUsername: "u", SASLPasswordFile: "pw"}, nil},
		{"PLAIN without TLS", kafka.Security{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPassword: "p"}, nil},
		{"certificate without key", kafka.Security{CertFile: "c.pem"}, []string{"KeyFile"}},
		{"key without certificate", kafka.Security{KeyFile: "c.key"}, []string{"CertFile"}},
		{"unknown mechanism", kafka.Security{SASLMechanism: "GSSAPI", SASLUsername: "u", SASLPassword: "p"}, []string{"SASLMechanism"}},
		{"username without mechanism", kafka.Security{SASLUsername: "u"}, []string{"SASLMechanism"}},
		{"mechanism without user or password", kafka.Security{SASLMechanism: "SCRAM-SHA-256"}, []string{"SASLUsername", "SASLPasswordFile"}},
		{"password and password file", kafka.Security{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPassword: "p", SASLPasswordFile: "f"}, []string{"SASLPassword"}},
		{"everything wrong at once", kafka.Security{CertFile: "c.pem", SASLMechanism: "SCRAM-SHA-1"}, []string{"KeyFile", "SASLMechanism"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sec.Validate()
			var got []string
			for _, e := range unjoin(err) {
				var se *kafka.ConfigError
				if !errors.As(e, &se) {
					t.Fatalf("error %v is not a *kafka.ConfigError", e)
				}
				got = append(got, se.Field)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.fields) {
				t.Errorf("Validate() named %v, want %v (error: %v)", got, tt.fields, err)
			}
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestSecurityOptionsFiles: Options reads every file it is given; a missing,
// empty, malformed, mismatched or expired one fails with the field, the
// file's name and what is wrong, and good files give TLS and SASL options.
func TestSecurityOptionsFiles(t *testing.T) {
	ca := testenv.NewCA(t, "test CA")
	cert, key := ca.Issue(t, testenv.CertOptions{CommonName: "client"})
	otherCert, _ := ca.Issue(t, testenv.CertOptions{CommonName: "other"})
	expiredCert, expiredKey := ca.Issue(t, testenv.CertOptions{CommonName: "expired",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return f
	}
	notPEM := write("not.pem", "hello\n", 0o600)
	empty := write("empty", "", 0o600)
	password := write("password", "s3cret\n", 0o600)
	unreadable := write("unreadable.pem", "x", 0o000)
	missing := filepath.Join(dir, "missing.pem")

	tests := []struct {
		name  string
		sec   kafka.Security
		field string   // "" for success
		want  []string // substrings of the message
	}{
		{"mutual TLS and SCRAM", kafka.Security{CAFile: ca.File, CertFile: cert, KeyFile: key,
			SASLMechanism: kafka.SASLScramSHA512, SASLUsername: "u", SASLPasswordFile: password}, "", nil},
		{"missing CA file", kafka.Security{CAFile: missing}, "CAFile", []string{missing, "no such file"}},
		{"CA file that is not PEM", kafka.Security{CAFile: notPEM}, "CAFile", []string{notPEM, "no PEM certificate"}},
		{"missing certificate", kafka.Security{CertFile: missing, KeyFile: key}, "CertFile", []string{missing, "no such file"}},
		{"key that is not PEM", kafka.Security{CertFile: cert, KeyFile: notPEM}, "KeyFile", []string{notPEM, "no PEM private key"}},
		{"key of another certificate", kafka.Security{CertFile: otherCert, KeyFile: key}, "KeyFile", []string{otherCert, key, "does not match"}},
		{"expired certificate", kafka.Security{CertFile: expiredCert, KeyFile: expiredKey}, "CertFile", []string{expiredCert, "expired on"}},
		{"empty password file", kafka.Security{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPasswordFile: empty}, "SASLPasswordFile", []string{empty, "empty"}},
		{"missing password file", kafka.Security{SASLMechanism: "PLAIN", SASLUsername: "u", SASLPasswordFile: missing}, "SASLPasswordFile", []string{missing, "no such file"}},
	}
	if os.Geteuid() != 0 { // root reads any file
		tests = append(tests, struct {
			name  string
			sec   kafka.Security
			field string
			want  []string
		}{"unreadable CA file", kafka.Security{CAFile: unreadable}, "CAFile", []string{unreadable, "permission denied"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.sec.Options()
			if tt.field == "" {
				if err != nil || len(opts) != 2 {
					t.Fatalf("Options() = %d options, %v; want TLS and SASL", len(opts), err)
				}
				return
			}
			var se *kafka.ConfigError
			if !errors.As(err, &se) || se.Field != tt.field {
				t.Fatalf("Options() error %v, want a *ConfigError on %s", err, tt.field)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestSecurityNeverPrintsThePassword: however a Security is printed or
// logged, the password is not in it.
func TestSecurityNeverPrintsThePassword(t *testing.T) {
	canary := testenv.Canary(t)
	sec := kafka.Security{CAFile: "/etc/ca.pem", SASLMechanism: "SCRAM-SHA-512", SASLUsername: "alice", SASLPassword: canary}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("connect", "kafka_security", sec)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("connect", "kafka_security", sec)
	for _, out := range []string{fmt.Sprint(sec), fmt.Sprintf("%v %+v %#v %s", sec, sec, sec, sec), sec.String(), logged.String()} {
		if strings.Contains(out, canary) {
			t.Errorf("the password shows in %q", out)
		}
		if !strings.Contains(out, "alice") {
			t.Errorf("%q does not say who connects", out)
		}
	}
	if sec.Protocol() != "SASL_SSL" {
		t.Errorf("Protocol() = %s, want SASL_SSL", sec.Protocol())
	}
}

// TestClassifyConfiguration: the errors franz-go and crypto/tls report for
// a wrong password, a denied ACL, a refused certificate, a TLS/plaintext
// mismatch and a topic Kafka refuses (as they look on the wire, wrapped in
// a record timeout) are configuration classes, never fatal for the record;
// an outage is not one.
func TestClassifyConfiguration(t *testing.T) {
	timedOut := func(err error) error {
		return fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, err)
	}
	tests := []struct {
		name  string
		err   error
		class string
	}{
		{"wrong SASL password", timedOut(kerr.SaslAuthenticationFailed), kafka.ClassAuthentication},
		{"SASL spoken to a plaintext listener", timedOut(kerr.IllegalSaslState), kafka.ClassAuthentication},
		{"mechanism not enabled", kerr.UnsupportedSaslMechanism, kafka.ClassAuthentication},
		{"topic ACL", kerr.TopicAuthorizationFailed, kafka.ClassAuthorization},
		{"cluster ACL", kerr.ClusterAuthorizationFailed, kafka.ClassAuthorization},
		{"topic Kafka refuses to write", timedOut(kerr.InvalidTopicException), kafka.ClassConfiguration},
		{"topic policy", kerr.PolicyViolation, kafka.ClassConfiguration},
		{"untrusted broker", timedOut(&net.OpError{Op: "dial", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}), kafka.ClassTLS},
		{"broker certificate for another name", timedOut(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "nope"}), kafka.ClassTLS},
		{"expired broker certificate", x509.CertificateInvalidError{Reason: x509.Expired}, kafka.ClassTLS},
		{"client certificate refused by the broker", timedOut(&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}), kafka.ClassTLS},
		{"TLS spoken to a plaintext listener", timedOut(&kgo.ErrFirstReadEOF{}), kafka.ClassTLS},
		{"plaintext spoken to a TLS listener", timedOut(errors.New("invalid large response size 352518912 > limit 104857600; the first three bytes received appear to be a tls alert record for TLS v1.2; is this a plaintext connection speaking to a tls endpoint?")), kafka.ClassTLS},
		{"brokers down is not configuration", timedOut(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), kafka.ClassTimeout},
		{"cancelled is not configuration", context.Canceled, kafka.ClassUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, fatal := kafka.Classify(tt.err)
			if class != tt.class || fatal {
				t.Errorf("Classify(%v) = %s, fatal %v; want %s, not fatal", tt.err, class, fatal, tt.class)
			}
			if want := tt.class != kafka.ClassTimeout && tt.class != kafka.ClassUnknown; kafka.IsConfiguration(class) != want {
				t.Errorf("IsConfiguration(%s) = %v, want %v", class, !want, want)
			}
		})
	}
}

// TestConfigurationClasses: the one rule names four classes; every other
// class, an unknown topic included (it may be created), is the record's or
// a passing outage's and is retried, counted and quarantined as usual.
func TestConfigurationClasses(t *testing.T) {
	want := []string{kafka.ClassAuthentication, kafka.ClassTLS, kafka.ClassAuthorization, kafka.ClassConfiguration}
	if got := kafka.ConfigurationClasses(); !slices.Equal(got, want) {
		t.Errorf("ConfigurationClasses() = %v, want %v", got, want)
	}
	for _, class := range want {
		if !kafka.IsConfiguration(class) {
			t.Errorf("IsConfiguration(%s) = false", class)
		}
	}
	for _, class := range []string{kafka.ClassTimeout, kafka.ClassBrokerUnavailable, kafka.ClassTooLarge,
		kafka.ClassUnknownTopic, kafka.ClassInvalidRecord, kafka.ClassEncode, kafka.ClassNoRoute, kafka.ClassUnknown} {
		if kafka.IsConfiguration(class) {
			t.Errorf("IsConfiguration(%s) = true", class)
		}
	}
}
