package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
)

// ConfigError is one invalid field of a ProducerConfig, ConsumerConfig or
// DLQWriterConfig; their validation joins one per invalid field (errors.As
// finds them). Its Field names the field and Msg says what is wrong; the
// same type is every herald package's ConfigError.
type ConfigError = config.Error

// Error classes of a failed publication. Fatal ones can never succeed by
// retrying the same record; the relay quarantines them at once.
// Configuration classes (see IsConfiguration) are nobody's fault but the
// deployment's: no event is charged for them.
const (
	ClassTimeout           = "timeout"
	ClassBrokerUnavailable = "broker_unavailable"
	ClassTooLarge          = "too_large"
	ClassAuthentication    = "authentication"
	ClassAuthorization     = "authorization"
	ClassTLS               = "tls"
	ClassUnknownTopic      = "unknown_topic"
	ClassInvalidRecord     = "invalid_record"
	ClassEncode            = "encode"
	ClassNoRoute           = "no_route"
	ClassConfiguration     = "configuration"
	ClassUnknown           = "unknown"
)

// configurationClasses are the classes IsConfiguration accepts.
var configurationClasses = []string{ClassAuthentication, ClassTLS, ClassAuthorization, ClassConfiguration}

// IsConfiguration says whether class is a failure of the deployment's
// configuration rather than of a record, the one rule herald applies to
// them (docs/security.md): authentication (SASL refused, credentials
// unreadable) or tls (a certificate refused either way, TLS spoken to a
// plaintext listener or the reverse), which refuse the client's every
// connection; authorization (an ACL denies the topic or the cluster
// operation) or configuration (Kafka refuses the topic itself:
// INVALID_TOPIC_EXCEPTION, POLICY_VIOLATION), which refuse a topic. Retrying
// the record cannot help and quarantining it would be wrong: every other
// record to the same place fails the same way until an operator fixes the
// configuration, after which they all succeed.
func IsConfiguration(class string) bool {
	return slices.Contains(configurationClasses, class)
}

// ConfigurationClasses returns the classes IsConfiguration accepts, for
// the metrics that have one series per class.
func ConfigurationClasses() []string {
	return slices.Clone(configurationClasses)
}

// Classes returns every class a failed publication is recorded with (the
// Class* constants), for callers that check a class they are given, as
// herald quarantine --class does.
func Classes() []string {
	return []string{ClassTimeout, ClassBrokerUnavailable, ClassTooLarge, ClassAuthentication, ClassAuthorization,
		ClassTLS, ClassUnknownTopic, ClassInvalidRecord, ClassEncode, ClassNoRoute, ClassConfiguration, ClassUnknown}
}

// Classify names the class of a produce error and says whether it is fatal
// for the record.
func Classify(err error) (class string, fatal bool) {
	// Configuration first: franz-go reports a record that timed out while
	// the brokers refused the client with both errors wrapped, and a
	// refused TLS handshake is also a net.Error.
	if class, ok := classifyConfiguration(err); ok {
		return class, false
	}
	var netErr net.Error
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return ClassTooLarge, true
	case errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.CorruptMessage),
		errors.Is(err, kerr.InvalidTimestamp):
		return ClassInvalidRecord, true
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return ClassUnknownTopic, false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout),
		errors.Is(err, kerr.RequestTimedOut):
		return ClassTimeout, false
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend),
		errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.LeaderNotAvailable),
		errors.Is(err, kerr.BrokerNotAvailable), errors.Is(err, kgo.ErrRecordRetries),
		errors.Is(err, kgo.ErrClientClosed), errors.As(err, &netErr):
		return ClassBrokerUnavailable, false
	}
	return ClassUnknown, false
}

// classifyConfiguration recognises the configuration classes.
func classifyConfiguration(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var (
		credErr     *credentialsError
		unknownCA   x509.UnknownAuthorityError
		invalidCert x509.CertificateInvalidError
		hostErr     x509.HostnameError
		verifyErr   *tls.CertificateVerificationError
		headerErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		firstEOF    *kgo.ErrFirstReadEOF
		opErr       *net.OpError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism), errors.As(err, &credErr):
		return ClassAuthentication, true
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed):
		return ClassAuthorization, true
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.PolicyViolation):
		return ClassConfiguration, true
	case errors.As(err, &unknownCA), errors.As(err, &invalidCert), errors.As(err, &hostErr),
		errors.As(err, &verifyErr), errors.As(err, &headerErr), errors.As(err, &alertErr):
		return ClassTLS, true
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		// The broker refused the handshake with a TLS alert (bad
		// certificate, unknown CA); crypto/tls reports it this way.
		return ClassTLS, true
	case errors.As(err, &firstEOF):
		// The broker hung up on a new connection at once: TLS or SASL
		// expected but not spoken (franz-go's guess, usually right).
		return ClassTLS, true
	case strings.Contains(err.Error(), "speaking to a tls endpoint"):
		// franz-go read a TLS alert where a Kafka response should be: a
		// plaintext client on a TLS listener. It has no error type for it.
		return ClassTLS, true
	}
	return "", false
}
