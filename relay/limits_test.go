package relay_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// largestEvent is the biggest event the writer accepts with its default
// limits: a payload of exactly outbox.MaxPayloadBytesDefault bytes (random
// text, which no codec shrinks, plus characters encoding/json would escape
// as \u003c and friends), and every other field at its maximum length in
// 4-byte characters (32 headers of 128+1024 characters).
func largestEvent(t *testing.T, aggregateType string) outbox.Event {
	t.Helper()
	const prefix, suffix = `{"note":"`, `"}`
	escapable := strings.Repeat("<>&\u2028", 1000)
	noise := make([]byte, outbox.MaxPayloadBytesDefault)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	body := base64.RawStdEncoding.EncodeToString(noise)[:outbox.MaxPayloadBytesDefault-len(prefix)-len(suffix)-len(escapable)]
	payload := prefix + escapable + body + suffix
	if len(payload) != outbox.MaxPayloadBytesDefault || !json.Valid([]byte(payload)) {
		t.Fatalf("payload of %d bytes (valid JSON: %v)", len(payload), json.Valid([]byte(payload)))
	}
	wide := func(n int) string { return strings.Repeat("😀", n) }
	headers := map[string]string{}
	for i := range outbox.HeaderMaxCount {
		name := fmt.Sprintf("%03d", i) + wide(outbox.HeaderNameMaxLen-3)
		headers[name] = wide(outbox.HeaderValueMaxLen)
	}
	return outbox.Event{
		AggregateType: aggregateType, AggregateID: wide(outbox.AggregateIDMaxLen),
		EventType: wide(outbox.EventTypeMaxLen), SchemaVersion: 65535, Payload: json.RawMessage(payload),
		Headers: headers, OccurredAt: time.Date(2026, 9, 26, 10, 12, 30, 123456000, time.FixedZone("", 8*3600)),
	}
}

// TestLargestAcceptedEventIsPublished: the limits agree end to end. The
// writer accepts a payload of exactly its default limit and refuses one
// byte more; a relay with its default settings publishes the largest event
// the writer accepts (envelope, key and headers included) to a topic whose
// max.message.bytes is what `herald topics create` sets by default, instead
// of quarantining it as too_large.
func TestLargestAcceptedEventIsPublished(t *testing.T) {
	maxBytes := strconv.Itoa(kafka.MaxRecordBytesDefault)
	e := newEnv(t, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &maxBytes}})
	ctx := context.Background()

	over := largestEvent(t, "order")
	over.Payload = append(json.RawMessage(`{"n":1,`), over.Payload[1:]...)
	if _, err := e.write(ctx, true, over); !errors.Is(err, outbox.ErrPayloadTooLarge) {
		t.Fatalf("a payload of %d bytes (limit %d): %v, want ErrPayloadTooLarge", len(over.Payload), outbox.MaxPayloadBytesDefault, err)
	}
	big := largestEvent(t, strings.Repeat("😀", outbox.AggregateTypeMaxLen))
	ids, err := e.write(ctx, true, big)
	if err != nil {
		t.Fatalf("the writer refused the largest event: %v", err)
	}
	size, err := relay.RecordBatchBytes(store.Event{ID: ids[0], AggregateType: big.AggregateType,
		AggregateID: big.AggregateID, AggregateSeq: math.MaxUint64, EventType: big.EventType,
		SchemaVersion: big.SchemaVersion, Payload: big.Payload, Headers: big.Headers, OccurredAt: big.OccurredAt}, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest event's record: %d bytes (payload %d, overhead %d; limit %d)", size,
		len(big.Payload), size-len(big.Payload), kafka.MaxRecordBytesDefault)
	if size-len(big.Payload) > kafka.RecordOverheadMax {
		t.Errorf("the record adds %d bytes to its payload, more than kafka.RecordOverheadMax (%d)",
			size-len(big.Payload), kafka.RecordOverheadMax)
	}

	p := e.relay(t, testenv.RelayOptions{Name: "relay-largest", Env: []string{"HERALD_DEFAULT_TOPIC=" + e.topic}})
	var state, class, lastError string
	testenv.WaitFor(t, time.Minute, "the largest event published or quarantined", func() (bool, string) {
		err := e.db.DB.QueryRow(`SELECT CASE WHEN published_at IS NOT NULL THEN 'published'
			WHEN quarantined_at IS NOT NULL THEN 'quarantined' ELSE 'pending' END,
			COALESCE(error_class, ''), COALESCE(last_error, '') FROM outbox_events WHERE id = ?`, ids[0]).
			Scan(&state, &class, &lastError)
		if err != nil {
			t.Fatal(err)
		}
		return state != "pending", fmt.Sprintf("%s, last error %s %s", state, class, lastError)
	})
	stop(t, p)
	if state != "published" {
		t.Fatalf("the largest event the writer accepts was %s (%s: %s), want published", state, class, lastError)
	}
	e.verifyTopic(t, nil, nil)
}

// sizedEvent returns an event of aggregate agg whose record to topic is
// exactly size bytes by kafka.RecordBatchBytes, as the first event of its
// aggregate (sequence 1).
func sizedEvent(t *testing.T, aggregateType, agg, topic string, size int) outbox.Event {
	t.Helper()
	e := outbox.Event{AggregateType: aggregateType, AggregateID: agg, EventType: "order.updated", SchemaVersion: 1,
		OccurredAt: time.Date(2026, 9, 26, 10, 12, 30, 123456000, time.UTC)}
	for pad, tries := 0, 0; tries < 100; tries++ {
		e.Payload = json.RawMessage(`{"pad":"` + strings.Repeat("x", pad) + `"}`)
		got, err := relay.RecordBatchBytes(store.Event{ID: "01234567-89ab-cdef-0123-456789abcdef", AggregateType: e.AggregateType,
			AggregateID: agg, AggregateSeq: 1, EventType: e.EventType, SchemaVersion: 1, Payload: e.Payload,
			OccurredAt: e.OccurredAt}, topic)
		switch {
		case err != nil:
			t.Fatal(err)
		case got == size:
			return e
		case got > size && pad == 0:
			t.Fatalf("the smallest event is %d bytes, more than %d", got, size)
		}
		pad += max(size-got, -1)
	}
	t.Fatalf("no event of exactly %d bytes", size)
	return outbox.Event{}
}

// TestRecordLimitsOfRelayAndTopic: with the relay's --max-record-bytes and
// a topic's max.message.bytes both smaller than an event, the event is
// quarantined as too_large while one just under the limit is published:
// the relay's limit 3 bytes under (franz-go may count up to 3 bytes more
// than Kafka; the relay never sends a batch Kafka would count over it),
// the topic's exactly at it.
func TestRecordLimitsOfRelayAndTopic(t *testing.T) {
	const relayMax, topicMax = 200_000, 100_000
	small, large := strconv.Itoa(topicMax), strconv.Itoa(4*relayMax)
	e := newEnv(t, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &small}})
	largeTopic := testenv.NewTopic(t, e.brokers, testenv.TopicOptions{Configs: map[string]*string{"max.message.bytes": &large}})
	ctx := context.Background()

	ids, err := e.write(ctx, true,
		sizedEvent(t, "order", "topic-under", e.topic, topicMax),
		sizedEvent(t, "order", "topic-over", e.topic, topicMax+1),
		sizedEvent(t, "big", "relay-under", largeTopic, relayMax-3),
		sizedEvent(t, "big", "relay-over", largeTopic, relayMax+1))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ids[0]: "published", ids[1]: "too_large", ids[2]: "published", ids[3]: "too_large"}

	p := e.relay(t, testenv.RelayOptions{Name: "relay-limits",
		Topics: map[string]string{"order": e.topic, "big": largeTopic},
		Env:    []string{fmt.Sprintf("HERALD_MAX_RECORD_BYTES=%d", relayMax), "HERALD_COMPRESSION=none"}})
	got := map[string]string{}
	testenv.WaitFor(t, time.Minute, "every event published or quarantined", func() (bool, string) {
		rows, err := e.db.DB.Query(`SELECT id, CASE WHEN published_at IS NOT NULL THEN 'published'
			WHEN quarantined_at IS NOT NULL THEN error_class ELSE 'pending' END FROM outbox_events`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, state string
			if err := rows.Scan(&id, &state); err != nil {
				t.Fatal(err)
			}
			got[id] = state
		}
		for _, s := range got {
			if s == "pending" {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
	stop(t, p)
	for i, name := range []string{"topic limit, at it", "topic limit, 1 byte over", "relay limit, 3 bytes under", "relay limit, 1 byte over"} {
		if got[ids[i]] != want[ids[i]] {
			t.Errorf("%s: %s, want %s", name, got[ids[i]], want[ids[i]])
		}
	}
}
