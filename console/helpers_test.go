package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// The users of the tests; the secrets are canaries no page, header or log
// line may show.
var (
	operator = console.User{Name: "alice", Role: console.RoleOperator, Secret: "alice-secret-canary-1"}
	readOnly = console.User{Name: "bob", Role: console.RoleReadOnly, Secret: "bob-secret-canary-22"}
)

// site is a console on a fresh database, served by httptest.
type site struct {
	t    *testing.T
	db   *testenv.Database
	st   *store.Store
	h    *console.Handler
	srv  *httptest.Server
	base string // the console's root URL, with the prefix
	log  *testenv.LogBuffer
}

// newSite serves a console for db under prefix with the test users; edit
// changes the configuration before the handler is made.
func newSite(t *testing.T, db *testenv.Database, prefix string, edit func(*console.Config)) *site {
	t.Helper()
	s := &site{t: t, db: db, st: db.Store(), log: &testenv.LogBuffer{}}
	cfg := console.Config{Store: s.st, Prefix: prefix, Users: []console.User{operator, readOnly},
		Logger: slog.New(slog.NewJSONHandler(s.log, nil))}
	if edit != nil {
		edit(&cfg)
	}
	h, err := console.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.h = h
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", h)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() { s.srv.Close(); h.Close() })
	s.base = s.srv.URL + prefix
	return s
}

// client is a browser-like client: it keeps cookies and follows no
// redirect by itself.
type client struct {
	t    *testing.T
	s    *site
	http *http.Client
	// auth, when set, is put on every request (basic auth or a token).
	auth func(*http.Request)
}

func (s *site) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: s.t, s: s, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login signs u in through the login page.
func (s *site) login(u console.User) *client {
	s.t.Helper()
	c := s.client()
	resp, body := c.post("/login", url.Values{"name": {u.Name}, "password": {u.Secret}, "next": {"/"}})
	if resp.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("sign-in of %s: %d\n%s", u.Name, resp.StatusCode, body)
	}
	return c
}

func (c *client) do(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	if c.auth != nil {
		c.auth(req)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, string(b)
}

func (c *client) get(path string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.s.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.do(req)
}

func (c *client) post(path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.s.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the CSRF token from one of the client's pages.
func (c *client) csrf() string {
	c.t.Helper()
	_, body := c.get("/quarantine")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		c.t.Fatalf("no CSRF token on the quarantine page:\n%s", body)
	}
	return m[1]
}

// quarantineEvents adds n events of distinct aggregates, each followed by
// a second event of its aggregate, and quarantines the first ones as a
// relay would for a record that can never be published (too_large); it
// returns the quarantined ids.
func quarantineEvents(t *testing.T, db *testenv.Database, n int, prefix string) []string {
	t.Helper()
	var events []outbox.Event
	for i := range n {
		agg := fmt.Sprintf("%s-%d", prefix, i)
		events = append(events, testenv.OrderEvents(agg, agg)...)
	}
	ids := db.AddEvents(t, events...)
	st := db.Store()
	c := testenv.Claim(t, st, "relay-test", time.Minute, len(ids))
	var out store.Outcome
	var quarantined []string
	for _, e := range c.Events {
		if e.AggregateSeq == 1 {
			out.Failed = append(out.Failed, store.Failure{EventID: e.ID, Class: "too_large", Quarantine: true,
				Message: "MESSAGE_TOO_LARGE: the record is larger than the topic's max.message.bytes"})
			quarantined = append(quarantined, e.ID)
		} else {
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Behind: prevID(c.Events, e)})
		}
	}
	if _, err := st.Settle(context.Background(), c, out, store.OrderHold); err != nil {
		t.Fatal(err)
	}
	return quarantined
}

func prevID(events []store.Event, e store.Event) string {
	for _, p := range events {
		if p.AggregateType == e.AggregateType && p.AggregateID == e.AggregateID && p.AggregateSeq == e.AggregateSeq-1 {
			return p.ID
		}
	}
	return ""
}

// state reads an event's state through the store.
func state(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	d, err := st.ShowEvent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d.State
}

// auditCount counts the audit log's records.
func auditCount(t *testing.T, st *store.Store) int {
	t.Helper()
	n := 0
	var before int64
	for {
		p, err := st.ReadAuditLog(context.Background(), before, 500)
		if err != nil {
			t.Fatal(err)
		}
		n += len(p.Entries)
		if before = p.Next; before == 0 {
			return n
		}
	}
}
