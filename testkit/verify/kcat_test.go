package verify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestReadTopicTellsAnUnknownTopic: kcat's "Unknown topic or partition"
// becomes ErrUnknownTopic, so a caller can read a topic that may not exist
// yet as empty; an existing empty topic reads as no records and no error.
func TestReadTopicTellsAnUnknownTopic(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	existing := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})

	records, err := verify.ReadTopic(context.Background(), brokers, existing+".never-created")
	if !errors.Is(err, verify.ErrUnknownTopic) || records != nil {
		t.Errorf("a topic never created: %d records, error %v; want ErrUnknownTopic", len(records), err)
	}
	records, err = verify.ReadTopic(context.Background(), brokers, existing)
	if err != nil || len(records) != 0 {
		t.Errorf("an empty topic: %d records, error %v; want none and no error", len(records), err)
	}
}
