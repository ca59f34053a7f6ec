package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// TestReplays: an operator starts a replay from the console with herald
// replay's rules; it re-publishes every retained event to the replay topic
// (read back with kcat), and its progress shows; a finished checkpoint is
// not run again, another selection under its name is refused, bad input
// is refused naming the field, and a running replay can be cancelled.
func TestReplays(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	brokers := testenv.KafkaBrokers(t)
	live := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 2})
	var aggs []string
	for i := range 30 {
		aggs = append(aggs, "r"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	db.AddEvents(t, testenv.OrderEvents(aggs...)...)
	st := db.Store()
	c := testenv.Claim(t, st, "relay-test", time.Minute, 100)
	var out store.Outcome
	for _, e := range c.Events {
		out.Published = append(out.Published, e.ID)
	}
	if _, err := st.Settle(context.Background(), c, out, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	adm := testenv.NewAdmin(t, brokers)
	s := newSite(t, db, "", func(cfg *console.Config) {
		cfg.Replay = &console.ReplayConfig{Producer: producer, Admin: adm, Topics: map[string]string{"order": live}}
	})
	op := s.login(operator)
	csrf := op.csrf()
	start := func(fields url.Values) (*http.Response, string) {
		fields.Set("csrf", csrf)
		return op.post("/replays/start", fields)
	}

	resp, body := start(url.Values{"checkpoint": {"incident-42"}, "from": {"1h"}, "to": {"0s"}, "rate": {"1000"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start: %d\n%s", resp.StatusCode, body)
	}
	testenv.WaitFor(t, time.Minute, "the replay finished", func() (bool, string) {
		_, page := op.get("/fragment/replays")
		return strings.Contains(page, "finished at"), shorten(page, 2000)
	})
	records, err := verify.ReadTopic(context.Background(), brokers, live+".replay")
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != len(aggs) {
		t.Errorf("%d records on the replay topic, want %d", len(records), len(aggs))
	}
	saved, err := st.ListReplays(context.Background(), 10)
	if err != nil || len(saved) != 1 || !saved[0].Finished || saved[0].Replayed != int64(len(aggs)) {
		t.Errorf("saved replays %+v, %v", saved, err)
	}

	refused := []struct {
		name   string
		fields url.Values
		code   int
		want   string
	}{
		{"finished checkpoint", url.Values{"checkpoint": {"incident-42"}, "from": {"1h"}, "rate": {"10"}}, http.StatusConflict, "already finished"},
		{"another selection", url.Values{"checkpoint": {"incident-42"}, "from": {"1h"}, "event_type": {"order.paid"}, "rate": {"10"}}, http.StatusBadRequest, "different selection"},
		{"no checkpoint", url.Values{"from": {"1h"}, "rate": {"10"}}, http.StatusBadRequest, "checkpoint: a name is required"},
		{"no start", url.Values{"checkpoint": {"x"}, "rate": {"10"}}, http.StatusBadRequest, "both ends of the time range are required"},
		{"a reversed range", url.Values{"checkpoint": {"x"}, "from": {"1h"}, "to": {"2h"}, "rate": {"10"}}, http.StatusBadRequest, "must be before"},
		{"a rate of 0", url.Values{"checkpoint": {"x"}, "from": {"1h"}, "rate": {"0"}}, http.StatusBadRequest, "rate:"},
		{"a rate too high", url.Values{"checkpoint": {"x"}, "from": {"1h"}, "rate": {"1000000"}}, http.StatusBadRequest, "rate:"},
		{"an aggregate id alone", url.Values{"checkpoint": {"x"}, "from": {"1h"}, "aggregate_id": {"a"}, "rate": {"10"}}, http.StatusBadRequest, "aggregate id"},
	}
	for _, tt := range refused {
		resp, body := start(tt.fields)
		if resp.StatusCode != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d, want %d with %q\n%s", tt.name, resp.StatusCode, tt.code, tt.want, shorten(body, 3000))
		}
	}

	// A slow replay, cancelled: it stops, resumable.
	if resp, body := start(url.Values{"checkpoint": {"slow"}, "from": {"1h"}, "rate": {"1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start the slow replay: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := op.post("/replays/cancel", url.Values{"csrf": {csrf}, "checkpoint": {"slow"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d\n%s", resp.StatusCode, body)
	}
	if _, page := op.get("/replays"); !strings.Contains(page, "cancelled (the checkpoint resumes it)") {
		t.Errorf("the cancelled replay is not shown cancelled:\n%s", shorten(page, 3000))
	}
	if resp, _ := op.post("/replays/cancel", url.Values{"csrf": {csrf}, "checkpoint": {"never-started"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("cancel of an unknown replay: %d", resp.StatusCode)
	}
}
