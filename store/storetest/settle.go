package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/internal/wait"
	"github.com/herald-outbox/herald/store"
)

func testFailureBacksOffQuarantinesAndScrubs(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	added := h.add(t, orderEvents("p", "p", "q")...)

	a := r.claim(t, 100)
	if len(a.Events) != 3 {
		t.Fatalf("claimed %d, want 3", len(a.Events))
	}
	secretMsg := "dial herald:hunter2@tcp(db:3306)/x failed; sasl_password=kafka-secret " + strings.Repeat("é", 1200)
	res := r.settle(t, a, store.Outcome{
		Failed: []store.Failure{
			{EventID: added[0], Class: "too_large", Message: secretMsg, Quarantine: true},
			{EventID: added[2], Class: "timeout", Message: "i/o timeout", RetryAfter: time.Hour},
		},
		Unsent: []store.Unsent{{EventID: added[1], Behind: added[0]}},
	})
	if res.Quarantined != 1 || res.LostLeases != 0 || res.Published != 0 {
		t.Errorf("settle: %+v", res)
	}
	now := h.now(t)

	q := h.show(t, added[0])
	if q.State != store.StateQuarantined || q.NextAttemptAt != nil || q.Attempts != 1 || q.ErrorClass != "too_large" {
		t.Errorf("quarantined event: state %s, next attempt %v, attempts %d, class %q", q.State, q.NextAttemptAt, q.Attempts, q.ErrorClass)
	}
	if strings.Contains(q.LastError, "hunter2") || strings.Contains(q.LastError, "kafka-secret") {
		t.Errorf("last_error keeps a secret: %q", q.LastError[:120])
	}
	if n := len([]rune(q.LastError)); n != store.LastErrorMaxLen {
		t.Errorf("last_error has %d characters, want it cut to %d", n, store.LastErrorMaxLen)
	}
	if len(q.Failures) != 1 || !q.Failures[0].Quarantined || q.Failures[0].Attempt != 1 ||
		q.Failures[0].RelayID != "relay-a" || strings.Contains(q.Failures[0].Error, "hunter2") {
		t.Errorf("failure log: %+v", q.Failures)
	}
	if q.HeldBehind != 1 {
		t.Errorf("quarantined event shows %d events held behind it, want 1", q.HeldBehind)
	}

	held := h.show(t, added[1])
	if held.State != store.StateHeld || held.Attempts != 0 || held.NextAttemptAt != nil || !strings.Contains(held.LastError, added[0]) {
		t.Errorf("event behind a quarantined one: state %s, attempts %d, next attempt %v, last_error %q; want held for ever behind %s with its attempt given back",
			held.State, held.Attempts, held.NextAttemptAt, held.LastError, added[0])
	}

	retry := h.show(t, added[2])
	if retry.NextAttemptAt == nil {
		t.Fatal("backing-off event has no retry time")
	}
	if wait := retry.NextAttemptAt.Sub(now); wait < 59*time.Minute || wait > time.Hour {
		t.Errorf("backing-off event retries in %v, want about an hour", wait)
	}
	if retry.State != store.StateBackingOff || retry.Attempts != 1 || retry.ErrorClass != "timeout" {
		t.Errorf("backing-off event: state %s, attempts %d, class %q", retry.State, retry.Attempts, retry.ErrorClass)
	}
	if c := r.claim(t, 100); len(c.Events)+c.Held != 0 {
		t.Errorf("claimed %d (held %d) while everything is quarantined, held or backing off", len(c.Events), c.Held)
	}
}

// testSuccessorsWaitBehindABackoff: a later event added while its head
// backs off is held until the head's retry time, and comes back with it.
func testSuccessorsWaitBehindBackoff(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	head := h.add(t, orderEvents("b")...)[0]
	a := r.claim(t, 100)
	r.settle(t, a, store.Outcome{Failed: []store.Failure{{EventID: head, Class: "timeout", Message: "timeout", RetryAfter: time.Second}}})
	next := h.add(t, orderEvents("b")...)[0]

	c := r.claim(t, 100)
	if len(c.Events) != 0 || c.Held != 1 {
		t.Fatalf("behind a backing-off head: claimed %v, held %d; want nothing and 1 held", ids(c.Events), c.Held)
	}
	headRetry := h.show(t, head).NextAttemptAt
	held := h.show(t, next)
	if held.State != store.StateHeld || held.NextAttemptAt == nil || !held.NextAttemptAt.Equal(*headRetry) {
		t.Fatalf("held event: state %s until %v; want held until the head's retry at %v", held.State, held.NextAttemptAt, headRetry)
	}
	var d store.Claim
	wait.Until(t, 10*time.Second, "the head and its successor claimed after the backoff", func() bool {
		d = r.claim(t, 100)
		return len(d.Events) > 0
	})
	if got := strings.Join(ids(d.Events), ","); got != head+","+next {
		t.Fatalf("after the backoff claimed %v, want the head then its successor", ids(d.Events))
	}
}

// testOrderPolicies: behind a quarantined head, hold keeps a later event
// back for ever and skip-quarantined lets it pass.
func testOrderPolicies(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	heads := h.add(t, orderEvents("hold", "skip")...)
	r.quarantine(t, heads...)
	next := h.add(t, orderEvents("hold", "skip")...)

	skip := r.claimWith(t, 100, store.OrderSkipQuarantined)
	if got := ids(skip.Events); len(got) != 2 || skip.Held != 0 {
		t.Fatalf("skip-quarantined policy claimed %v (held %d), want both successors", got, skip.Held)
	}
	// Given back unsent, as by a stopping relay: nothing to undo.
	r.settle(t, skip, store.Outcome{Unsent: []store.Unsent{{EventID: skip.Events[0].ID}, {EventID: skip.Events[1].ID}}})

	hold := r.claim(t, 100)
	if len(hold.Events) != 0 || hold.Held != 2 {
		t.Fatalf("hold policy: claimed %v, held %d; want nothing claimed and both held", ids(hold.Events), hold.Held)
	}
	for i, id := range next {
		if d := h.show(t, id); d.State != store.StateHeld || d.NextAttemptAt != nil || !strings.Contains(d.LastError, heads[i]) {
			t.Errorf("event behind quarantined %s: state %s, next attempt %v, last_error %q; want held for ever", heads[i], d.State, d.NextAttemptAt, d.LastError)
		}
	}
}

// testShutdownRelease: events given back unsent (a stopping relay) are
// claimable at once and keep their attempt count.
func testShutdownRelease(t *testing.T, h Harness) {
	r := h.join(t, "relay-a", time.Minute)
	added := h.add(t, orderEvents("s", "s")...)
	a := r.claim(t, 100)
	res := r.settle(t, a, store.Outcome{Unsent: []store.Unsent{{EventID: added[0]}, {EventID: added[1]}}})
	if res.LostLeases != 0 {
		t.Fatalf("release: %+v", res)
	}
	b := r.claim(t, 100)
	if got := strings.Join(ids(b.Events), ","); got != strings.Join(added, ",") {
		t.Fatalf("after the release claimed %v, want %v", ids(b.Events), added)
	}
	if b.Events[0].Attempts != 1 {
		t.Errorf("released event is on attempt %d, want 1 (the unsent attempt given back)", b.Events[0].Attempts)
	}
}

// testConfigurationRelease: an event stopped by a configuration failure
// (Unsent with a Class: the relay's credentials or an ACL, not the event)
// is charged nothing: no attempt is counted, no failure is logged, it
// is not quarantined and is claimable again at once, its row saying what
// stopped it, scrubbed. The event behind it in the batch comes back with it.
func testConfigurationRelease(t *testing.T, h Harness) {
	added := h.add(t, orderEvents("c", "c", "d")...)
	r := h.join(t, "relay-a", time.Minute)
	a := r.claim(t, 100)
	if len(a.Events) != 3 {
		t.Fatalf("claimed %d, want 3", len(a.Events))
	}
	msg := "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics; sasl_password=kafka-secret " + strings.Repeat("é", 1200)
	res := r.settle(t, a, store.Outcome{
		Published: []string{added[2]},
		Unsent: []store.Unsent{
			{EventID: added[0], Class: "authorization", Message: msg},
			{EventID: added[1], Behind: added[0]},
		},
	})
	if res.Published != 1 || res.Quarantined != 0 || res.LostLeases != 0 {
		t.Errorf("settle: %+v", res)
	}
	now := h.now(t)

	d := h.show(t, added[0])
	if d.Attempts != 0 || len(d.Failures) != 0 || d.State == store.StateQuarantined || d.ErrorClass != "authorization" {
		t.Errorf("event stopped by a configuration failure: attempts %d, %d failures logged, state %s, class %q; "+
			"want no attempt, no failure, not quarantined, class authorization",
			d.Attempts, len(d.Failures), d.State, d.ErrorClass)
	}
	if d.NextAttemptAt == nil || d.NextAttemptAt.After(now) {
		t.Errorf("it is claimable at %v, want at once (before %v)", d.NextAttemptAt, now)
	}
	if !strings.Contains(d.LastError, "TOPIC_AUTHORIZATION_FAILED") || strings.Contains(d.LastError, "kafka-secret") {
		t.Errorf("last_error %q: want the failure, scrubbed", d.LastError[:120])
	}
	if n := len([]rune(d.LastError)); n != store.LastErrorMaxLen {
		t.Errorf("last_error has %d characters, want it cut to %d", n, store.LastErrorMaxLen)
	}
	if behind := h.show(t, added[1]); behind.Attempts != 0 || len(behind.Failures) != 0 {
		t.Errorf("event behind it: attempts %d, %d failures; want its attempt given back and nothing logged",
			behind.Attempts, len(behind.Failures))
	}

	b := r.claim(t, 100)
	if got := strings.Join(ids(b.Events), ","); got != added[0]+","+added[1] {
		t.Fatalf("after the release claimed %v, want both events of the aggregate in order", ids(b.Events))
	}
	if b.Events[0].Attempts != 1 {
		t.Errorf("released event is on attempt %d, want 1", b.Events[0].Attempts)
	}
}
