package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestGroupLagsAreSorted: the lag rows `herald status` prints come sorted by
// group, topic and partition, whatever order Kafka answers in.
func TestGroupLagsAreSorted(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	adm := testenv.NewAdmin(t, brokers)
	topics := []string{
		testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 12}),
		testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 12}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	groups := []string{topics[0] + "-b", topics[0] + "-a"}
	for _, g := range groups {
		offsets := kadm.Offsets{}
		for _, topic := range topics {
			for p := range int32(12) {
				offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 0})
			}
		}
		// A topic just created may not be known to the group coordinator yet.
		testenv.WaitFor(t, 30*time.Second, "offsets committed for group "+g, func() (bool, string) {
			err := adm.CommitAllOffsets(ctx, g, offsets)
			return err == nil, fmt.Sprint(err)
		})
		t.Cleanup(func() { adm.DeleteGroup(context.Background(), g) })
	}

	lags, err := kafka.GroupLags(ctx, adm, groups, topics...)
	if err != nil {
		t.Fatal(err)
	}
	key := func(l kafka.PartitionLag) string { return fmt.Sprintf("%s %s %03d", l.Group, l.Topic, l.Partition) }
	var got []string
	for _, l := range lags {
		got = append(got, key(l))
	}
	if len(got) != 2*2*12 || !slices.IsSorted(got) {
		t.Errorf("%d lag rows, want 48 sorted by group, topic and partition:\n%s", len(got), strings.Join(got, "\n"))
	}
}
