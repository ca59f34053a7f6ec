package relay

import (
	"context"
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// result is what happened to one claimed event.
type result struct {
	event     store.Event
	topic     string
	partition int32
	err       error // nil: acknowledged
	sent      bool  // false: not produced, held behind a failure
	behind    string
	// isolated: produced with nothing else in flight, so a batch-level
	// error is this record's own.
	isolated bool
}

// publishBatch produces a claimed batch (sorted by aggregate and sequence):
// the first event of every aggregate at once, and each next event of an
// aggregate only after the previous one was acknowledged, so at most one
// record per aggregate is in flight (docs/design.md, "Publishing"). After a
// failure the rest of that aggregate's chain is not sent.
//
// Kafka refuses a whole partition batch when one record in it is too large
// or invalid, so such an error does not prove the record guilty. A chain
// whose head failed that way before is produced last, one record at a
// time with nothing else in flight: only an error repeated in isolation
// quarantines the event (see isolated).
func (r *Relay) publishBatch(ctx context.Context, events []store.Event) []result {
	results := make([]result, len(events))
	for i, e := range events {
		results[i].event = e
	}
	var normal, suspects []int // chain heads
	for i := range events {
		if i == 0 || !sameAggregate(events[i-1], events[i]) {
			if suspectClass(events[i].PreviousErrorClass) {
				suspects = append(suspects, i)
			} else {
				normal = append(normal, i)
			}
		}
	}
	r.produceChains(ctx, events, results, normal)
	for _, head := range suspects {
		r.produceChains(ctx, events, results, []int{head})
		for i := head; i < len(events) && sameAggregate(events[head], events[i]); i++ {
			results[i].isolated = true
		}
	}
	return results
}

// produceChains produces the chains starting at heads, concurrently, and
// returns when every record is acknowledged, failed or held back.
func (r *Relay) produceChains(ctx context.Context, events []store.Event, results []result, heads []int) {
	type ack struct {
		idx       int
		partition int32
		err       error
	}
	acks := make(chan ack, len(events))
	inFlight := 0

	// produce sends events[idx] (encoding failures are reported like produce
	// failures, without a round trip).
	produce := func(idx int) {
		res := &results[idx]
		res.sent = true
		rec, topic, err := r.record(res.event)
		res.topic = topic
		inFlight++
		if err != nil {
			acks <- ack{idx: idx, err: err}
			return
		}
		r.producer.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			acks <- ack{idx: idx, partition: rec.Partition, err: err}
		})
	}
	for _, h := range heads {
		produce(h)
	}
	for inFlight > 0 {
		a := <-acks
		inFlight--
		res := &results[a.idx]
		res.partition, res.err = a.partition, a.err
		next := a.idx + 1
		if next >= len(events) || !sameAggregate(events[a.idx], events[next]) {
			continue
		}
		if a.err == nil {
			produce(next)
			continue
		}
		for j := next; j < len(events) && sameAggregate(events[a.idx], events[j]); j++ {
			results[j].behind = res.event.ID
		}
	}
}

// suspectClass: errors Kafka reports for a whole partition batch, which may
// belong to another record of that batch.
func suspectClass(class string) bool {
	return class == kafka.ClassTooLarge || class == kafka.ClassInvalidRecord
}

func sameAggregate(a, b store.Event) bool {
	return a.AggregateType == b.AggregateType && a.AggregateID == b.AggregateID
}

// errNoRoute: no topic is configured for the event's aggregate type.
var errNoRoute = errors.New("no topic is configured for this aggregate type")

// encodeError marks a failure to build the record: fatal for the event.
type encodeError struct{ err error }

func (e encodeError) Error() string { return "encode: " + e.err.Error() }
func (e encodeError) Unwrap() error { return e.err }

// record builds the Kafka record of an event for its routed topic.
func (r *Relay) record(e store.Event) (*kgo.Record, string, error) {
	topic, ok := r.cfg.topicFor(e.AggregateType)
	if !ok {
		return nil, "", errNoRoute
	}
	rec, err := buildRecord(e, topic)
	return rec, topic, err
}

// buildRecord builds the Kafka record of an event: key = aggregate id,
// value = the versioned envelope, headers = herald's plus the event's own.
func buildRecord(e store.Event, topic string) (*kgo.Record, error) {
	value, err := envelope.Encode(envelope.Envelope{
		EventID: e.ID, Type: e.EventType, Version: e.SchemaVersion, OccurredAt: e.OccurredAt, Data: e.Payload,
	})
	if err != nil {
		return nil, encodeError{err}
	}
	headers := []kgo.RecordHeader{
		{Key: envelope.HeaderEventID, Value: []byte(e.ID)},
		{Key: envelope.HeaderEventType, Value: []byte(e.EventType)},
		{Key: envelope.HeaderEventVersion, Value: []byte(strconv.Itoa(int(e.SchemaVersion)))},
		{Key: envelope.HeaderAggregateType, Value: []byte(e.AggregateType)},
		{Key: envelope.HeaderAggregateSeq, Value: []byte(strconv.FormatUint(e.AggregateSeq, 10))},
	}
	for k, v := range e.Headers {
		headers = append(headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	// Timestamp stays zero, so franz-go stamps the produce time. It must not
	// be occurred_at: franz-go measures the delivery timeout from the
	// record's Timestamp, so an event older than that timeout (a backlog, a
	// replay) would fail with ErrRecordTimeout before it was ever sent, and
	// take its partition's buffered records with it. occurred_at travels in
	// the envelope.
	return &kgo.Record{Topic: topic, Key: []byte(e.AggregateID), Value: value, Headers: headers}, nil
}

// classify names a publication error's class and whether it is fatal.
func classify(err error) (string, bool) {
	var enc encodeError
	switch {
	case errors.Is(err, errNoRoute):
		return kafka.ClassNoRoute, true
	case errors.As(err, &enc):
		return kafka.ClassEncode, true
	}
	return kafka.Classify(err)
}
