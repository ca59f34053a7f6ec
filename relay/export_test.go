package relay

import (
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// RecordBatchBytes builds the record the relay publishes for e and returns
// its size as Kafka compares it with max.message.bytes.
func RecordBatchBytes(e store.Event, topic string) (int, error) {
	rec, err := buildRecord(e, topic)
	if err != nil {
		return 0, err
	}
	return kafka.RecordBatchBytes(rec), nil
}
