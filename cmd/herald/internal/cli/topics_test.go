package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestTopicsCreateReportsDifferences: `herald topics create` on an existing
// topic compares it with what was asked and names each difference in
// replication factor, min.insync.replicas and requested configs; it exits
// non-zero unless --allow-differences. A new topic gets max.message.bytes
// = --max-record-bytes, so it accepts every record a relay sends.
func TestTopicsCreateReportsDifferences(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	admin := testenv.NewAdmin(t, brokers)
	name := fmt.Sprintf("herald-t-create-%d", time.Now().UnixNano())
	t.Cleanup(func() { admin.DeleteTopic(context.Background(), name) })
	kf := "--kafka-brokers=" + strings.Join(brokers, ",")
	create := func(args ...string) (string, int) {
		t.Helper()
		return run(t, append([]string{"topics", "create", name, kf, "--partitions", "3"}, args...)...)
	}

	asked := []string{"--replication-factor", "1", "--min-insync-replicas", "1", "--config", "retention.ms=3600000"}
	if out, code := create(asked...); code != 0 || !strings.Contains(out, name+": created") {
		t.Fatalf("create: exit %d\n%s", code, out)
	}
	testenv.WaitTopic(t, brokers, name, 3)
	descs, err := kafka.DescribeTopics(context.Background(), admin, name)
	if err != nil {
		t.Fatal(err)
	}
	if got := descs[0].Configs["max.message.bytes"]; got != fmt.Sprint(kafka.MaxRecordBytesDefault) {
		t.Errorf("new topic's max.message.bytes %q, want %d (--max-record-bytes)", got, kafka.MaxRecordBytesDefault)
	}
	if out, code := create(asked...); code != 0 || !strings.Contains(out, name+": unchanged") || strings.Contains(out, "asked for") {
		t.Errorf("create again, same settings: exit %d\n%s", code, out)
	}

	differ := []string{"--replication-factor", "2", "--min-insync-replicas", "2", "--config", "retention.ms=7200000",
		"--config", "cleanup.policy=compact", "--max-record-bytes", fmt.Sprint(2 * kafka.MaxRecordBytesDefault)}
	out, code := create(differ...)
	for _, want := range []string{
		"replication factor is 1, asked for 2",
		"min.insync.replicas is 1, asked for 2",
		"retention.ms is 3600000, asked for 7200000",
		"cleanup.policy is delete, asked for compact",
		fmt.Sprintf("max.message.bytes is %d, asked for at least %d", kafka.MaxRecordBytesDefault, 2*kafka.MaxRecordBytesDefault),
		"--allow-differences",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("create with other settings does not say %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("create with other settings: exit %d, want 1", code)
	}
	if out, code := create(append(differ, "--allow-differences")...); code != 0 || !strings.Contains(out, "replication factor is 1, asked for 2") {
		t.Errorf("create --allow-differences: exit %d, want 0 and the differences still shown\n%s", code, out)
	}
}

// TestTopicsCreateFitsTheDefaultsToTheCluster: without
// --replication-factor, a cluster of fewer than 3 brokers gets a replica
// per broker and one in-sync replica fewer (at least 1), and the command
// says so; from 3 brokers on, the defaults (3 and 2) stand.
func TestTopicsCreateFitsTheDefaultsToTheCluster(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	admin := testenv.NewAdmin(t, brokers)
	md, err := admin.BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := len(md.Brokers)
	wantRF, wantISR := min(n, int(kafka.TopicReplicationFactorDefault)), kafka.TopicMinInsyncReplicasDefault
	if n < int(kafka.TopicReplicationFactorDefault) {
		wantISR = max(1, n-1)
	}
	name := fmt.Sprintf("herald-t-fit-%d", time.Now().UnixNano())
	t.Cleanup(func() { admin.DeleteTopics(context.Background(), name, name+"-3") })
	out, code := run(t, "topics", "create", name, "--kafka-brokers="+strings.Join(brokers, ","))
	if code != 0 || !strings.Contains(out, name+": created") {
		t.Fatalf("create with the defaults on %d broker(s): exit %d\n%s", n, code, out)
	}
	said := strings.Contains(out, fmt.Sprintf("the cluster has %d broker(s): replication factor %d, min.insync.replicas %d", n, wantRF, wantISR))
	if said != (n < int(kafka.TopicReplicationFactorDefault)) {
		t.Errorf("on %d broker(s) the command says:\n%s", n, out)
	}
	testenv.WaitTopic(t, brokers, name, kafka.TopicPartitionsDefault)
	descs, err := kafka.DescribeTopics(context.Background(), admin, name)
	if err != nil {
		t.Fatal(err)
	}
	if rf := len(descs[0].Partitions[0].Replicas); rf != wantRF || descs[0].Configs["min.insync.replicas"] != fmt.Sprint(wantISR) {
		t.Errorf("on %d broker(s): replication factor %d, min.insync.replicas %s; want %d and %d",
			n, rf, descs[0].Configs["min.insync.replicas"], wantRF, wantISR)
	}
	// Asked for explicitly, a factor the cluster cannot give is refused by
	// Kafka, not lowered.
	if n < 3 {
		if out, code := run(t, "topics", "create", name+"-3", "--replication-factor", "3", "--kafka-brokers="+strings.Join(brokers, ",")); code == 0 {
			t.Errorf("--replication-factor 3 on %d broker(s) succeeded:\n%s", n, out)
		}
	}
}

// TestTopicsDescribeChecksTheRecordLimit: a topic whose max.message.bytes
// is below the relays' --max-record-bytes is flagged, in text and JSON.
func TestTopicsDescribeChecksTheRecordLimit(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	limit := "1048588" // Kafka's default
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &limit}})
	kf := "--kafka-brokers=" + strings.Join(brokers, ",")

	out, code := run(t, "topics", "describe", topic, kf)
	if code != 0 || !strings.Contains(out, "max.message.bytes is 1048588, below the relays' record limit") ||
		!strings.Contains(out, "--max-record-bytes") {
		t.Errorf("describe with the default limit (%d): exit %d\n%s", kafka.MaxRecordBytesDefault, code, out)
	}
	out, code = run(t, "topics", "describe", topic, kf, "--json")
	var descs []kafka.TopicDescription
	if err := json.Unmarshal([]byte(out), &descs); err != nil || code != 0 || len(descs) != 1 || len(descs[0].Warnings) != 1 {
		t.Errorf("describe --json: exit %d, %v\n%s", code, err, out)
	}
	out, code = run(t, "topics", "describe", topic, kf, "--max-record-bytes", "1048588")
	if code != 0 || strings.Contains(out, "below") {
		t.Errorf("describe --max-record-bytes 1048588: exit %d\n%s", code, out)
	}
	out, code = run(t, "topics", "describe", topic, kf, "--max-record-bytes", "0")
	if code != exitUsage || !strings.Contains(out, "--max-record-bytes") {
		t.Errorf("describe --max-record-bytes 0: exit %d\n%s", code, out)
	}
}
