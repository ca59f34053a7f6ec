package kafka

import (
	"context"
	"errors"
	"net"

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
// ClassConfiguration is the relay's or the cluster's configuration (a topic
// Kafka refuses to write, a policy), not the event's fault: the relay keeps
// such events and retries them until the operator fixes it.
const (
	ClassTimeout           = "timeout"
	ClassBrokerUnavailable = "broker_unavailable"
	ClassTooLarge          = "too_large"
	ClassAuthorization     = "authorization"
	ClassUnknownTopic      = "unknown_topic"
	ClassInvalidRecord     = "invalid_record"
	ClassEncode            = "encode"
	ClassNoRoute           = "no_route"
	ClassConfiguration     = "configuration"
	ClassUnknown           = "unknown"
)

// Classify names the class of a produce error and says whether it is fatal
// for the record.
func Classify(err error) (class string, fatal bool) {
	var netErr net.Error
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return ClassTooLarge, true
	case errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.CorruptMessage),
		errors.Is(err, kerr.InvalidTimestamp):
		return ClassInvalidRecord, true
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed), errors.Is(err, kerr.SaslAuthenticationFailed):
		// Fixable by an operator (an ACL) without touching the event: retry.
		return ClassAuthorization, false
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return ClassUnknownTopic, false
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.PolicyViolation):
		return ClassConfiguration, false
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
