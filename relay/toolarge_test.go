package relay_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestTooLargeRecordIsQuarantined: on a topic whose max.message.bytes is
// 10,000, two events carry 50 KB payloads that do not compress (random
// base64). Each is quarantined with class too_large; the later events of
// its aggregate are held (error_class held, next_attempt_at = Never) and
// never published; the earlier event of one of them and every other
// aggregate — whose records share partition batches with the big ones, which
// Kafka refuses whole — are published, none quarantined.
func TestTooLargeRecordIsQuarantined(t *testing.T) {
	testenv.OnEachServer(t, testTooLargeRecordIsQuarantined)
}

func testTooLargeRecordIsQuarantined(t *testing.T, server testenv.Server) {
	maxBytes := "10000"
	e := newEnvOn(t, server, testenv.TopicOptions{Partitions: 2, Configs: map[string]*string{"max.message.bytes": &maxBytes}})

	noise := make([]byte, 37_500)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	big := func(agg string) outbox.Event {
		ev := event(agg, 0)
		ev.Payload = json.RawMessage(fmt.Sprintf(`{"order_id":%q,"blob":%q}`, agg, base64.StdEncoding.EncodeToString(noise)))
		return ev
	}
	// big-head: #1 big, #2 and #3 held. big-mid: #1 published, #2 big,
	// #3 and #4 held. 30 other aggregates of 3 events each.
	var events []outbox.Event
	events = append(events, big("big-head"), event("big-head", 2), event("big-head", 3))
	events = append(events, event("big-mid", 1), big("big-mid"), event("big-mid", 3), event("big-mid", 4))
	for i := range 90 {
		events = append(events, event(aggName(i%30), i))
	}
	ids, err := e.write(context.Background(), true, events...)
	if err != nil {
		t.Fatal(err)
	}
	bigHead, bigMid := ids[0:3], ids[3:7]
	tooLarge := []string{bigHead[0], bigMid[1]}
	held := []string{bigHead[1], bigHead[2], bigMid[2], bigMid[3]}

	p := e.relay(t, testenv.RelayOptions{Name: "relay-big"})
	testenv.WaitFor(t, time.Minute, "big events quarantined, the rest published", func() (bool, string) {
		rows, err := verify.LoadOutbox(context.Background(), e.db.DB)
		if err != nil {
			t.Fatal(err)
		}
		published, quarantined, parked := 0, 0, 0
		for _, r := range rows {
			switch {
			case r.Published:
				published++
			case r.Quarantined:
				quarantined++
			case r.ErrorClass == "held" && r.Never:
				parked++
			}
		}
		return published == 91 && quarantined == 2 && parked == 4,
			fmt.Sprintf("%d published (want 91), %d quarantined (want 2), %d held at Never (want 4)", published, quarantined, parked)
	})
	stop(t, p)

	rows, err := verify.LoadOutbox(context.Background(), e.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]verify.Row{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, id := range tooLarge {
		if r := byID[id]; !r.Quarantined || r.ErrorClass != "too_large" || r.LastError == "" || r.Published {
			t.Errorf("big event %s (%s #%d): quarantined %v, class %q, last_error %q; want quarantined as too_large",
				id, r.AggregateID, r.Seq, r.Quarantined, r.ErrorClass, r.LastError)
		}
	}
	for _, id := range held {
		if r := byID[id]; r.Published || r.Quarantined || r.ErrorClass != "held" || !r.Never {
			t.Errorf("event %s (%s #%d) behind a quarantined one: published %v, quarantined %v, class %q, next attempt %v; want held until Never",
				id, r.AggregateID, r.Seq, r.Published, r.Quarantined, r.ErrorClass, r.NextAttemptAt)
		}
	}
	// Kafka refuses a partition batch whole: the innocent records batched
	// with a big one failed too_large once and were retried, not quarantined.
	innocent := e.db.Count(t, `SELECT COUNT(DISTINCT event_id) FROM outbox_failures f
		JOIN outbox_events e ON e.id = f.event_id WHERE f.error_class = 'too_large' AND e.published_at IS NOT NULL`)
	t.Logf("%d published events shared a refused batch with a big one and were retried", innocent)
	unpublished := append(append([]string{}, tooLarge...), held...)
	e.verifyTopic(t, func(r verify.Row) bool { return r.Published }, unpublished)
}
