package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// Result is what happened to one event of a published batch.
type Result struct {
	Event store.Event
	// Topic and Partition say where the record went (Partition only once
	// acknowledged).
	Topic     string
	Partition int32
	// Err is nil when Kafka acknowledged the record.
	Err error
	// Sent is false when the record was not produced: an earlier event of
	// its aggregate failed (Behind names it), or the batch was given up.
	Sent   bool
	Behind string
	// Isolated: produced with nothing else in flight, so an error Kafka
	// reports for a whole partition batch is this record's own.
	Isolated bool
	answered bool // the producer acknowledged or failed it
}

// Publisher produces outbox events to Kafka keeping per-aggregate order:
// at most one record per aggregate is in flight, and an aggregate's next
// event is produced only after the previous one was acknowledged
// (docs/design.md, "Publishing"). Any event source feeds it: the polling
// relay with claimed batches, a stream with what it reads. It is safe for
// concurrent use by batches that share no aggregate.
type Publisher struct {
	producer Producer
	encoder  *record.Encoder
}

// NewPublisher returns a Publisher producing with producer the records
// encoder builds (topic and format per aggregate type).
func NewPublisher(producer Producer, encoder *record.Encoder) *Publisher {
	return &Publisher{producer: producer, encoder: encoder}
}

// Publish produces a batch sorted by aggregate and AggregateSeq: the first
// event of every aggregate at once, and each next event of an aggregate
// only after the previous one was acknowledged. After a failure the rest
// of that aggregate is not sent. It returns one Result per event, in
// order, when every record is answered, held back, or ctx ended (the
// records still unanswered then fail with ctx's error).
//
// Kafka refuses a whole partition batch when one record in it is too large
// or invalid, so such an error does not prove the record guilty. A chain
// whose head failed that way before (Event.PreviousErrorClass) is produced
// last, one record at a time with nothing else in flight: only an error
// repeated in isolation is the record's own (Result.Isolated).
func (p *Publisher) Publish(ctx context.Context, events []store.Event) []Result {
	results := make([]Result, len(events))
	for i, e := range events {
		results[i].Event = e
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
	p.produceChains(ctx, events, results, normal)
	for _, head := range suspects {
		p.produceChains(ctx, events, results, []int{head})
		for i := head; i < len(events) && sameAggregate(events[head], events[i]); i++ {
			results[i].Isolated = true
		}
	}
	return results
}

// produceChains produces the chains starting at heads, concurrently, and
// returns when every record is acknowledged, failed or held back.
func (p *Publisher) produceChains(ctx context.Context, events []store.Event, results []Result, heads []int) {
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
		res.Sent = true
		rec, err := p.encoder.Encode(res.Event)
		inFlight++
		if err != nil {
			acks <- ack{idx: idx, err: err}
			return
		}
		res.Topic = rec.Topic
		p.producer.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			acks <- ack{idx: idx, partition: rec.Partition, err: err}
		})
	}
	for _, h := range heads {
		produce(h)
	}
	for inFlight > 0 {
		var a ack
		select {
		case a = <-acks:
		case <-ctx.Done():
			abandon(ctx, events, results)
			return
		}
		inFlight--
		res := &results[a.idx]
		res.Partition, res.Err, res.answered = a.partition, a.err, true
		next := a.idx + 1
		if next >= len(events) || !sameAggregate(events[a.idx], events[next]) {
			continue
		}
		if a.err == nil {
			produce(next)
			continue
		}
		for j := next; j < len(events) && sameAggregate(events[a.idx], events[j]); j++ {
			results[j].Behind = res.Event.ID
		}
	}
}

// abandon gives up waiting for the records still in flight when ctx ends
// (the lease expired, or shutdown ran out of time). franz-go neither
// acknowledges nor fails a record whose produce request went out unanswered
// (its idempotent producer cannot know whether it was written) until a
// broker answers, so without this a Kafka outage would hold the relay in
// this batch for as long as it lasts. The records may still be written
// later: duplicates, which at-least-once allows. The acks channel has room
// for every record, so late promises never block.
func abandon(ctx context.Context, events []store.Event, results []Result) {
	err := fmt.Errorf("no acknowledgement from Kafka before the lease ended: %w", ctx.Err())
	for i := range results {
		res := &results[i]
		if !res.Sent || res.answered {
			continue
		}
		res.Err = err
		for j := i + 1; j < len(events) && sameAggregate(events[i], events[j]) && !results[j].Sent; j++ {
			results[j].Behind = res.Event.ID
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

// classify names a publication error's class and whether it is fatal.
func classify(err error) (string, bool) {
	var enc *record.EncodeError
	switch {
	case errors.Is(err, record.ErrNoRoute):
		return kafka.ClassNoRoute, true
	case errors.As(err, &enc):
		return kafka.ClassEncode, true
	}
	return kafka.Classify(err)
}
