package relay

import (
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// RecordBatchBytes builds the record the relay publishes for e (herald's
// format) and returns its size as Kafka compares it with max.message.bytes.
func RecordBatchBytes(e store.Event, topic string) (int, error) {
	enc, err := record.NewEncoder(record.Config{DefaultTopic: topic})
	if err != nil {
		return 0, err
	}
	rec, err := enc.Encode(e)
	if err != nil {
		return 0, err
	}
	return kafka.RecordBatchBytes(rec), nil
}
