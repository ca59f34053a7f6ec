package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/internal/config"
)

// TransactionalConfig shapes the transactional producer of a change
// stream's leader in exactly-once delivery (docs/design.md, "Exactly once
// on the topic").
type TransactionalConfig struct {
	// Producer is the producer's configuration, as for NewProducer.
	Producer ProducerConfig
	// TransactionalID names the producer across its incarnations: a new
	// client with the same id fences every older one. Required.
	TransactionalID string
	// Timeout is the transaction timeout (transaction.timeout.ms): Kafka
	// aborts a transaction left open longer. Required; the relay passes
	// its lease.
	Timeout time.Duration
}

// NewTransactionalProducer returns a transactional franz-go client with
// its producer id loaded: by the time it returns, Kafka's transaction
// coordinator has ended whatever transaction an older producer with the
// same id left open (committing one it had been asked to commit, aborting
// any other) and refuses that producer's every later request. An error
// says why the cluster or the principal cannot run transactions
// (*TransactionsError).
func NewTransactionalProducer(ctx context.Context, cfg TransactionalConfig) (*kgo.Client, error) {
	var errs config.Errors
	if cfg.TransactionalID == "" {
		errs.Add("TransactionalID", "is required")
	}
	if cfg.Timeout <= 0 {
		errs.Add("Timeout", "must be positive, got %v", cfg.Timeout)
	}
	if err := errs.Err(); err != nil {
		return nil, fmt.Errorf("kafka transactional producer config: %w", err)
	}
	p := cfg.Producer
	// Records carry their own deadline through the transaction: the
	// relay bounds a transaction by its lease and aborts it.
	p.RecordTimestamps = true
	p.ClientOptions = append(append([]kgo.Opt{}, p.ClientOptions...),
		kgo.TransactionalID(cfg.TransactionalID), kgo.TransactionTimeout(cfg.Timeout))
	cl, err := NewProducer(p)
	if err != nil {
		return nil, err
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, &TransactionsError{TransactionalID: cfg.TransactionalID, err: err}
	}
	return cl, nil
}

// TransactionsError says why a transactional producer could not start.
type TransactionsError struct {
	TransactionalID string
	err             error
}

func (e *TransactionsError) Error() string {
	id := e.TransactionalID
	switch {
	case errors.Is(e.err, kerr.TransactionalIDAuthorizationFailed):
		return fmt.Sprintf("Kafka refuses the transactional id %q: grant the principal WRITE and DESCRIBE on TransactionalId %q (or a prefix of it, e.g. herald): %v", id, id, e.err)
	case errors.Is(e.err, kerr.ClusterAuthorizationFailed):
		return fmt.Sprintf("Kafka refuses transactions for the principal: grant IDEMPOTENT_WRITE on the cluster (or WRITE on the topics): %v", e.err)
	case errors.Is(e.err, context.DeadlineExceeded), errors.Is(e.err, kerr.CoordinatorNotAvailable),
		errors.Is(e.err, kerr.NotEnoughReplicas), errors.Is(e.err, kerr.NotEnoughReplicasAfterAppend):
		return fmt.Sprintf("Kafka has no transaction coordinator for %q: the cluster cannot host transactions (check transaction.state.log.replication.factor and transaction.state.log.min.isr against the brokers; CheckTransactions names them): %v", id, e.err)
	}
	return fmt.Sprintf("start the transactional producer %q: %v", id, e.err)
}

func (e *TransactionsError) Unwrap() error { return e.err }

// CheckTransactions reads the brokers' settings that decide whether the
// cluster can host transactions and returns an error naming each that
// cannot work: a transaction state log replicated more than the cluster
// has brokers, or requiring more in-sync replicas than there are brokers.
func CheckTransactions(ctx context.Context, adm *kadm.Client) error {
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("read the brokers: %w", err)
	}
	brokers := len(meta.Brokers)
	var ids []int32
	for _, b := range meta.Brokers {
		ids = append(ids, b.NodeID)
	}
	// Asked by id: without ids Kafka answers with the cluster-wide dynamic
	// settings only, not what each broker was started with.
	configs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		return fmt.Errorf("read the brokers' settings: %w", err)
	}
	var problems []string
	for _, rc := range configs {
		if rc.Err != nil {
			return fmt.Errorf("read broker %s's settings: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Value == nil {
				continue
			}
			n, err := strconv.Atoi(*c.Value)
			if err != nil {
				continue
			}
			switch c.Key {
			case "transaction.state.log.replication.factor":
				if n > brokers {
					problems = append(problems, fmt.Sprintf("broker %s: transaction.state.log.replication.factor=%d, but the cluster has %d broker(s): lower it to at most %d", rc.Name, n, brokers, brokers))
				}
			case "transaction.state.log.min.isr":
				if n > brokers {
					problems = append(problems, fmt.Sprintf("broker %s: transaction.state.log.min.isr=%d, but the cluster has %d broker(s): lower it to at most %d", rc.Name, n, brokers, brokers))
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the cluster cannot host transactions: %s", strings.Join(problems, "; "))
	}
	return nil
}
