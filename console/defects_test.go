package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestStaticListsNothing: /static/ serves the assets and lists none of
// them, signed in or not (a directory listing is never useful).
func TestStaticListsNothing(t *testing.T) {
	s := newSite(t, testenv.NewHeraldDatabase(t), "/console", nil)
	for name, c := range map[string]*client{"signed out": s.client(), "signed in": s.login(readOnly)} {
		if resp, body := c.get("/static/"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "console.css") {
			t.Errorf("%s: GET /static/: %d\n%s", name, resp.StatusCode, body)
		}
		if resp, _ := c.get("/static/console.css"); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET /static/console.css: %d", name, resp.StatusCode)
		}
	}
}

// TestSignInNextIsEncoded: after sign-in the Location header carries the
// next page encoded, and only a path of the console.
func TestSignInNextIsEncoded(t *testing.T) {
	s := newSite(t, testenv.NewHeraldDatabase(t), "/console", nil)
	for _, tt := range []struct{ next, want string }{
		{`/events?x="><script>alert(1)</script>`, "/console/events?x=%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E"},
		{"/events/<id>", "/console/events/%3Cid%3E"},
		{"/quarantine?state=quarantined", "/console/quarantine?state=quarantined"},
		{"https://evil.example/", "/console/"},
		{"//evil.example/", "/console/"},
		{"/\\evil.example", "/console/"},
	} {
		resp, body := s.client().post("/login", url.Values{"name": {operator.Name}, "password": {operator.Secret}, "next": {tt.next}})
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || got != tt.want {
			t.Errorf("next %q: %d, Location %q, want %q\n%s", tt.next, resp.StatusCode, got, tt.want, body)
		}
	}
}

// TestEventPagesSayWhatIsTrue: the Events page's caption claims no order
// it does not keep when several aggregates are listed, and a published
// event shows no next attempt.
func TestEventPagesSayWhatIsTrue(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	s := newSite(t, db, "/console", nil)
	ids := db.AddEvents(t, append(testenv.OrderEvents("a", "a"), testenv.OrderEvents("b", "b")...)...)
	c := testenv.Claim(t, db.Store(), "relay-test", time.Minute, 1)
	if _, err := db.Store().Settle(context.Background(), c, store.Outcome{Published: []string{c.Events[0].ID}}, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	u := s.login(readOnly)
	_, body := u.get("/events?state=")
	if strings.Contains(body, "one aggregate: in its order") || !strings.Contains(body, "Ordered by event id") {
		t.Errorf("the Events page's caption over aggregates a and b:\n%s", body)
	}
	if _, body := u.get("/events/" + c.Events[0].ID); !strings.Contains(body, "published") || strings.Contains(body, "next attempt") {
		t.Errorf("published event %s shows a next attempt:\n%s", c.Events[0].ID, body)
	}
	if _, body := u.get("/events/" + ids[len(ids)-1]); !strings.Contains(body, "next attempt") {
		t.Errorf("pending event %s shows no next attempt:\n%s", ids[len(ids)-1], body)
	}
}
