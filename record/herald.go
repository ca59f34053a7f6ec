package record

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/store"
)

// encodeHerald builds herald's record of an event: key = aggregate id,
// value = the versioned envelope, headers = herald's plus the event's own,
// less any of the event's own in herald's reserved prefix: a record never
// carries two values of a herald header (docs/contracts.md, section 2).
func encodeHerald(e store.Event, topic string) (*kgo.Record, error) {
	value, err := envelope.Encode(envelope.Envelope{
		EventID: e.ID, Type: e.EventType, Version: e.SchemaVersion, OccurredAt: e.OccurredAt, Data: e.Payload,
	})
	if err != nil {
		return nil, &EncodeError{err}
	}
	headers := append([]kgo.RecordHeader{
		{Key: envelope.HeaderEventID, Value: []byte(e.ID)},
		{Key: envelope.HeaderEventType, Value: []byte(e.EventType)},
		{Key: envelope.HeaderEventVersion, Value: []byte(strconv.Itoa(int(e.SchemaVersion)))},
		{Key: envelope.HeaderAggregateType, Value: []byte(e.AggregateType)},
		{Key: envelope.HeaderAggregateSeq, Value: []byte(strconv.FormatUint(e.AggregateSeq, 10))},
	}, storedHeaders(e)...)
	// Timestamp stays zero, so franz-go stamps the produce time. It must not
	// be occurred_at: franz-go measures the delivery timeout from the
	// record's Timestamp, so an event older than that timeout (a backlog, a
	// replay) would fail with ErrRecordTimeout before it was ever sent, and
	// take its partition's buffered records with it. occurred_at travels in
	// the envelope.
	return &kgo.Record{Topic: topic, Key: []byte(e.AggregateID), Value: value, Headers: headers}, nil
}
