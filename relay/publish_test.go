package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/record"
	"github.com/herald-outbox/herald/store"
)

// The publisher's unit tests: a scripted producer records what is in
// flight and answers each record as the test says. Pure logic, no broker.

// scriptedProducer answers records asynchronously, like a real client,
// with the error answer returns for the record's event (nil: acknowledged;
// errSilent: never answered).
type scriptedProducer struct {
	answer func(eventID string) error

	mu       sync.Mutex
	inFlight map[string]string // key -> event id in flight
	order    []string          // event ids in produce order
	overlap  []string          // keys produced while one of theirs was in flight
	maxLive  int
}

var errSilent = errors.New("no answer")

func newScripted(answer func(string) error) *scriptedProducer {
	return &scriptedProducer{answer: answer, inFlight: map[string]string{}}
}

func (p *scriptedProducer) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	id := ""
	for _, h := range r.Headers {
		if h.Key == envelope.HeaderEventID {
			id = string(h.Value)
		}
	}
	p.mu.Lock()
	key := string(r.Key)
	if prev, busy := p.inFlight[key]; busy {
		p.overlap = append(p.overlap, key+": "+id+" while "+prev)
	}
	p.inFlight[key] = id
	p.order = append(p.order, id)
	p.maxLive = max(p.maxLive, len(p.inFlight))
	p.mu.Unlock()
	err := p.answer(id)
	if err == errSilent {
		return
	}
	go func() {
		p.mu.Lock()
		delete(p.inFlight, key)
		p.mu.Unlock()
		promise(r, err)
	}()
}

// batch builds events "a#1".."a#n" for the given aggregates, sorted by
// aggregate and sequence as a claim returns them.
func batch(spec ...string) []store.Event {
	var out []store.Event
	for _, s := range spec {
		agg, n, _ := strings.Cut(s, "*")
		count := 1
		fmt.Sscan(n, &count)
		for seq := 1; seq <= count; seq++ {
			out = append(out, store.Event{
				ID: fmt.Sprintf("%s#%d", agg, seq), AggregateType: "order", AggregateID: agg, AggregateSeq: uint64(seq),
				EventType: "order.created", SchemaVersion: 1, Payload: []byte(`{}`), Attempts: 1,
			})
		}
	}
	return out
}

func describe(results []Result) string {
	var parts []string
	for _, r := range results {
		switch {
		case !r.Sent && r.Behind != "":
			parts = append(parts, r.Event.ID+" unsent behind "+r.Behind)
		case !r.Sent:
			parts = append(parts, r.Event.ID+" unsent")
		case r.Err != nil:
			parts = append(parts, r.Event.ID+" failed")
		default:
			parts = append(parts, r.Event.ID+" ok")
		}
	}
	return strings.Join(parts, ", ")
}

func TestPublisherKeepsOneRecordPerAggregateInFlight(t *testing.T) {
	prod := newScripted(func(string) error { return nil })
	p := newTestPublisher(t, prod, map[string]string{"order": "orders.v1"}, "")
	results := p.Publish(context.Background(), batch("a*5", "b*3", "c*1"))
	if got := describe(results); got != "a#1 ok, a#2 ok, a#3 ok, a#4 ok, a#5 ok, b#1 ok, b#2 ok, b#3 ok, c#1 ok" {
		t.Fatalf("results: %s", got)
	}
	if len(prod.overlap) > 0 {
		t.Errorf("two records of one aggregate in flight at once: %v", prod.overlap)
	}
	if prod.maxLive < 2 {
		t.Errorf("at most %d records in flight: aggregates should be produced concurrently", prod.maxLive)
	}
	pos := map[string]int{}
	for i, id := range prod.order {
		pos[id] = i
	}
	for _, agg := range []string{"a", "b"} {
		for seq := 2; pos[fmt.Sprintf("%s#%d", agg, seq)] != 0; seq++ {
			if pos[fmt.Sprintf("%s#%d", agg, seq)] < pos[fmt.Sprintf("%s#%d", agg, seq-1)] {
				t.Errorf("%s#%d produced before %s#%d", agg, seq, agg, seq-1)
			}
		}
	}
	for _, r := range results {
		if r.Topic != "orders.v1" {
			t.Errorf("%s went to %q", r.Event.ID, r.Topic)
		}
	}
}

func TestPublisherStopsAnAggregateAtItsFirstFailure(t *testing.T) {
	prod := newScripted(func(id string) error {
		if id == "a#2" {
			return kerr.NotEnoughReplicas
		}
		return nil
	})
	p := newTestPublisher(t, prod, map[string]string{"order": "orders.v1"}, "")
	results := p.Publish(context.Background(), batch("a*4", "b*2"))
	want := "a#1 ok, a#2 failed, a#3 unsent behind a#2, a#4 unsent behind a#2, b#1 ok, b#2 ok"
	if got := describe(results); got != want {
		t.Fatalf("results\n got %s\nwant %s", got, want)
	}
	for _, id := range prod.order {
		if id == "a#3" || id == "a#4" {
			t.Errorf("%s was produced after its predecessor failed", id)
		}
	}
}

func TestPublisherIsolatesSuspects(t *testing.T) {
	// b#1 failed too_large before, batched with others: its chain goes
	// last, alone.
	events := batch("a*2", "b*2", "c*1")
	events[2].PreviousErrorClass = "too_large"
	prod := newScripted(func(string) error { return nil })
	p := newTestPublisher(t, prod, map[string]string{"order": "orders.v1"}, "")
	results := p.Publish(context.Background(), events)
	if got := strings.Join(prod.order[len(prod.order)-2:], ","); got != "b#1,b#2" {
		t.Errorf("produce order %v: want the suspect chain b last", prod.order)
	}
	for _, r := range results {
		if want := r.Event.AggregateID == "b"; r.Isolated != want {
			t.Errorf("%s isolated %v, want %v", r.Event.ID, r.Isolated, want)
		}
	}
}

func TestPublisherFailsUnroutableEventsWithoutARoundTrip(t *testing.T) {
	events := batch("a*2")
	events[0].AggregateType, events[1].AggregateType = "invoice", "invoice"
	prod := newScripted(func(string) error { return nil })
	results := newTestPublisher(t, prod, map[string]string{"order": "orders.v1"}, "").Publish(context.Background(), events)
	if got := describe(results); got != "a#1 failed, a#2 unsent behind a#1" {
		t.Fatalf("results: %s", got)
	}
	if class, fatal := classify(results[0].Err); class != "no_route" || !fatal {
		t.Errorf("class %s fatal %v, want no_route, fatal", class, fatal)
	}
	if len(prod.order) != 0 {
		t.Errorf("produced %v", prod.order)
	}
	routed := newTestPublisher(t, prod, nil, "misc.v1").Publish(context.Background(), events)
	if routed[0].Topic != "misc.v1" || routed[0].Err != nil {
		t.Errorf("with a default topic: %+v", routed[0])
	}
}

func TestPublisherGivesUpUnansweredRecordsWhenTheContextEnds(t *testing.T) {
	prod := newScripted(func(id string) error {
		if id == "a#1" {
			return errSilent
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	results := newTestPublisher(t, prod, map[string]string{"order": "orders.v1"}, "").Publish(ctx, batch("a*2", "b*1"))
	if got := describe(results); got != "a#1 failed, a#2 unsent behind a#1, b#1 ok" {
		t.Fatalf("results: %s", got)
	}
	if !errors.Is(results[0].Err, context.DeadlineExceeded) {
		t.Errorf("unanswered record's error %v, want the context's", results[0].Err)
	}
}

// newTestPublisher returns a Publisher of herald's records routed by
// topics and defaultTopic.
func newTestPublisher(t *testing.T, prod Producer, topics map[string]string, defaultTopic string) *Publisher {
	t.Helper()
	enc, err := record.NewEncoder(record.Config{Topics: topics, DefaultTopic: defaultTopic})
	if err != nil {
		t.Fatal(err)
	}
	return NewPublisher(prod, enc)
}
