package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// shopOutboxDDL is a foreign outbox table of Debezium's default columns,
// whose copy the overview lists.
var shopOutboxDDL = map[testenv.Server]string{
	testenv.MariaDB: `CREATE TABLE shop_outbox (id CHAR(36) NOT NULL PRIMARY KEY, aggregatetype VARCHAR(255) NOT NULL,
		aggregateid VARCHAR(255) NOT NULL, type VARCHAR(255) NOT NULL, payload JSON)`,
	testenv.PostgreSQL: `CREATE TABLE shop_outbox (id uuid NOT NULL PRIMARY KEY, aggregatetype varchar(255) NOT NULL,
		aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb)`,
}

// TestPagesAndHeaders: every page renders for a signed-in user on both
// databases under a prefix, with the same facts as the store's (a copied
// foreign table among them), and every
// answer (pages, errors, assets, health) carries the security headers.
func TestPagesAndHeaders(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		db := testenv.NewHeraldDatabaseOn(t, server)
		ids := quarantineEvents(t, db, 3, "pg")
		db.Exec(t, shopOutboxDDL[server])
		if err := migrations.InstallMapping(t.Context(), db.DB, migrations.Mapping{Table: "shop_outbox"}); err != nil {
			t.Fatal(err)
		}
		s := newSite(t, db, "/herald", nil)
		c := s.login(readOnly)
		d, err := s.st.ShowEvent(t.Context(), ids[0])
		if err != nil {
			t.Fatal(err)
		}
		pages := []struct {
			path string
			code int
			want []string
		}{
			{"/", http.StatusOK, []string{`id="quarantined">3<`, "ready (claimable)", "Failures in the last hour", "too_large",
				`id="copied-tables"`, "<td>shop_outbox</td>", "herald_copy_shop_outbox"}},
			{"/fragment/overview", http.StatusOK, []string{`id="quarantined">3<`}},
			{"/events", http.StatusOK, []string{ids[0], ids[2], "6 event(s) on this page"}},
			{"/events?state=quarantined&limit=2", http.StatusOK, []string{"2 event(s) on this page", `rel="next"`}},
			{"/events?event_id=" + ids[1], http.StatusOK, []string{ids[1], "1 event(s) on this page"}},
			{"/events/" + ids[0], http.StatusOK, []string{ids[0], "quarantined", "MESSAGE_TOO_LARGE", "Hidden: payloads are shown to operators only"}},
			{"/timeline?aggregate_type=order&aggregate_id=pg-0", http.StatusOK, []string{ids[0], "holds the rest", "held"}},
			{"/quarantine", http.StatusOK, []string{ids[0], ids[1], ids[2], "too_large"}},
			{"/quarantine?class=too_large&aggregate_type=order&aggregate_id=pg-1", http.StatusOK, []string{ids[1]}},
			{"/replays", http.StatusOK, []string{"No replay was ever run"}},
			{"/audit", http.StatusOK, []string{"No operator action was recorded yet"}},
			{"/events?state=stuck", http.StatusBadRequest, []string{"state: &#34;stuck&#34; is none of"}},
			{"/events?event_id=not-a-uuid", http.StatusBadRequest, []string{"event id: &#34;not-a-uuid&#34; is not a UUID"}},
			{"/events?from=yesterday", http.StatusBadRequest, []string{"from: &#34;yesterday&#34; is neither a time"}},
			{"/events/not-a-uuid", http.StatusBadRequest, []string{"is not a UUID"}},
			{"/events/01890000-0000-7000-8000-000000000000", http.StatusNotFound, []string{"no event has the id"}},
			{"/timeline?aggregate_type=order", http.StatusBadRequest, []string{"both its type and its id"}},
			{"/quarantine?class=bogus", http.StatusBadRequest, []string{"class: &#34;bogus&#34; is none of"}},
			{"/audit?before=x", http.StatusBadRequest, []string{"not a position in the audit log"}},
			{"/static/console.css", http.StatusOK, []string{"herald console"}},
			{"/static/console.js", http.StatusOK, []string{"data-refresh"}},
			{"/healthz", http.StatusOK, []string{"ok"}},
			{"/readyz", http.StatusOK, []string{"ready"}},
			{"/nothing-here", http.StatusNotFound, nil},
		}
		for _, p := range pages {
			resp, body := c.get(p.path)
			if resp.StatusCode != p.code {
				t.Errorf("GET %s: %d, want %d\n%s", p.path, resp.StatusCode, p.code, body)
				continue
			}
			for _, w := range p.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in the page", p.path, w)
				}
			}
			checkHeaders(t, p.path, resp)
			if strings.Contains(body, string(d.Payload)) {
				t.Errorf("GET %s: a read-only user sees the payload %s", p.path, d.Payload)
			}
		}
		// Outside its prefix the handler serves nothing.
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/heraldry/", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("outside the prefix: %d", rec.Code)
		}
	})
}

func checkHeaders(t *testing.T, path string, resp *http.Response) {
	t.Helper()
	h := resp.Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: Content-Security-Policy allows inline code: %q", path, csp)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("%s: headers %v", path, h)
	}
}

// TestAuthentication: without signing in a page sends to the login page;
// wrong passwords, users and tokens are refused (401, no session); basic
// auth and bearer tokens work for scripts; health endpoints stay open;
// no secret shows in any answer or log line.
func TestAuthentication(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	s := newSite(t, db, "", nil)
	anon := s.client()
	resp, _ := anon.get("/quarantine")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
		t.Errorf("GET /quarantine unsigned: %d to %q, want 303 to the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, tt := range []struct{ name, user, password string }{
		{"wrong password", operator.Name, "alice-secret-canary-2"},
		{"unknown user", "mallory", operator.Secret},
		{"empty password", operator.Name, ""},
	} {
		c := s.client()
		resp, body := c.post("/login", url.Values{"name": {tt.user}, "password": {tt.password}})
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong user name or password") || len(resp.Cookies()) > 0 {
			t.Errorf("%s: %d, cookies %v\n%s", tt.name, resp.StatusCode, resp.Cookies(), body)
		}
		if resp, _ := c.get("/"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: the overview answered %d after a refused sign-in", tt.name, resp.StatusCode)
		}
	}
	for _, tt := range []struct {
		name string
		auth func(*http.Request)
		code int
	}{
		{"basic auth", func(r *http.Request) { r.SetBasicAuth(operator.Name, operator.Secret) }, http.StatusOK},
		{"bearer token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+readOnly.Secret) }, http.StatusOK},
		{"wrong basic auth", func(r *http.Request) { r.SetBasicAuth(operator.Name, readOnly.Secret) }, http.StatusUnauthorized},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope-nope-nope") }, http.StatusUnauthorized},
	} {
		c := s.client()
		c.auth = tt.auth
		if resp, body := c.get("/"); resp.StatusCode != tt.code {
			t.Errorf("%s: %d, want %d\n%s", tt.name, resp.StatusCode, tt.code, body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp, _ := anon.get(path); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s unsigned: %d, want 200", path, resp.StatusCode)
		}
	}
	c := s.login(operator)
	_, page := c.get("/")
	if !strings.Contains(page, "alice") || !strings.Contains(page, "operator") {
		t.Errorf("the overview does not say who is signed in")
	}
	csrf := c.csrf()
	if resp, _ := c.post("/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign out: %d", resp.StatusCode)
	}
	if resp, _ := c.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the overview answered %d after signing out", resp.StatusCode)
	}
	for _, secret := range []string{operator.Secret, readOnly.Secret} {
		if strings.Contains(s.log.String(), secret) {
			t.Errorf("a secret shows in the console's log")
		}
		if strings.Contains(page, secret) {
			t.Errorf("a secret shows in a page")
		}
	}
}

// TestActionsAreGuarded: a read-only user's post (with a valid CSRF
// token) is refused 403; a post without the token, or with another
// session's, or from another site, is refused 403; bad input (empty or
// too long reason, a bad id, a filter matching nothing, both ids and a
// filter) is refused with a clear error. None of them changes any event
// or writes the audit log.
func TestActionsAreGuarded(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		db := testenv.NewHeraldDatabaseOn(t, server)
		ids := quarantineEvents(t, db, 2, "g")
		s := newSite(t, db, "", nil)
		op, ro := s.login(operator), s.login(readOnly)
		opToken, roToken := op.csrf(), ro.csrf()
		if strings.Contains(mustGet(t, ro, "/events/"+ids[0]), `id="retry"`) || strings.Contains(mustGet(t, ro, "/quarantine"), "Retry selected") {
			t.Errorf("a read-only user is shown action buttons")
		}
		if !strings.Contains(mustGet(t, op, "/events/"+ids[0]), `id="retry"`) {
			t.Errorf("an operator is shown no retry button")
		}
		// The payload: to operators who ask, never to read-only users.
		if resp, body := ro.get("/events/" + ids[0] + "?payload=1"); resp.StatusCode != http.StatusForbidden || strings.Contains(body, `{&#34;n&#34;:0}`) {
			t.Errorf("a read-only user asking for the payload: %d", resp.StatusCode)
		}
		if body := mustGet(t, op, "/events/"+ids[0]+"?payload=1"); !strings.Contains(body, `id="payload">{&#34;n&#34;:0}`) {
			t.Errorf("an operator asking for the payload does not see it")
		}
		long := strings.Repeat("é", console.ReasonMaxChars+1)
		tests := []struct {
			name string
			c    *client
			path string
			form url.Values
			code int
			want string
		}{
			{"read-only user", ro, "/quarantine/retry", url.Values{"csrf": {roToken}, "id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}}, http.StatusForbidden, "bob is read-only"},
			{"no CSRF token", op, "/quarantine/retry", url.Values{"id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}}, http.StatusForbidden, "CSRF token"},
			{"another session's token", op, "/quarantine/discard", url.Values{"csrf": {roToken}, "id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}}, http.StatusForbidden, "CSRF token"},
			{"empty reason", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "id": {ids[0]}, "reason": {"  "}, "confirm": {"yes"}, "count": {"1"}}, http.StatusBadRequest, "reason: required"},
			{"reason too long", op, "/quarantine/discard", url.Values{"csrf": {opToken}, "id": {ids[0]}, "reason": {long}, "confirm": {"yes"}, "count": {"1"}}, http.StatusBadRequest, "reason: 1001 characters, at most 1000"},
			{"bad id", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "id": {"1 OR 1=1"}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}}, http.StatusBadRequest, "is not an event id"},
			{"nothing selected", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "reason": {"x"}}, http.StatusBadRequest, "select at least one event"},
			{"empty filter", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "scope": {"filter"}, "reason": {"x"}}, http.StatusBadRequest, "filter: name at least one"},
			{"filter matching nothing", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "scope": {"filter"}, "class": {"timeout"}, "reason": {"x"}}, http.StatusBadRequest, "no quarantined event matches"},
			{"unknown class", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "scope": {"filter"}, "class": {"bogus"}, "reason": {"x"}}, http.StatusBadRequest, "class: &#34;bogus&#34; is none of"},
			{"ids and a filter", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "scope": {"filter"}, "class": {"too_large"}, "id": {ids[0]}, "reason": {"x"}}, http.StatusBadRequest, "not both"},
			{"a count that changed", op, "/quarantine/retry", url.Values{"csrf": {opToken}, "id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"2"}}, http.StatusBadRequest, "the selection changed"},
			{"unknown action", op, "/quarantine/delete", url.Values{"csrf": {opToken}, "id": {ids[0]}, "reason": {"x"}}, http.StatusNotFound, "no such action"},
			{"replay by a read-only user", ro, "/replays/start", url.Values{"csrf": {roToken}, "checkpoint": {"x"}, "from": {"1h"}, "rate": {"10"}}, http.StatusForbidden, "read-only"},
		}
		for _, tt := range tests {
			resp, body := tt.c.post(tt.path, tt.form)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("%s: %d, want %d with %q\n%s", tt.name, resp.StatusCode, tt.code, tt.want, body)
			}
		}
		// From another site: refused before the form is read.
		req, _ := http.NewRequest(http.MethodPost, s.base+"/quarantine/retry", strings.NewReader(url.Values{"csrf": {opToken},
			"id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		if resp, body := op.do(req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site post: %d\n%s", resp.StatusCode, body)
		}
		for _, id := range ids {
			if got := state(t, s.st, id); got != store.StateQuarantined {
				t.Errorf("event %s is %s after refused actions", id, got)
			}
		}
		if n := auditCount(t, s.st); n != 0 {
			t.Errorf("%d audit records after refused actions", n)
		}
	})
}

func mustGet(t *testing.T, c *client, path string) string {
	t.Helper()
	resp, body := c.get(path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
	}
	return body
}

// TestBulkActions: a selection and a filter each show the count to
// confirm and change nothing until confirmed; confirmed, they retry or
// discard through the store (held successors released), and the audit log
// says who (console:alice), what and why, as for the CLI.
func TestBulkActions(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		db := testenv.NewHeraldDatabaseOn(t, server)
		ids := quarantineEvents(t, db, 4, "b")
		s := newSite(t, db, "", nil)
		op := s.login(operator)
		csrf := op.csrf()

		// A selection of two: confirmation first.
		form := url.Values{"csrf": {csrf}, "id": {ids[0], ids[1], ids[0]}, "reason": {"the topic's limit was raised"}}
		resp, body := op.post("/quarantine/retry", form)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Retry 2 quarantined event(s)") {
			t.Fatalf("confirmation: %d\n%s", resp.StatusCode, body)
		}
		if state(t, s.st, ids[0]) != store.StateQuarantined || auditCount(t, s.st) != 0 {
			t.Fatalf("the confirmation page changed something")
		}
		form.Set("confirm", "yes")
		form.Set("count", "2")
		resp, body = op.post("/quarantine/retry", form)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "2 of 2 event(s) retried") {
			t.Fatalf("retry: %d\n%s", resp.StatusCode, body)
		}
		for _, id := range ids[:2] {
			if got := state(t, s.st, id); got != store.StatePending {
				t.Errorf("%s is %s after the retry, want pending", id, got)
			}
		}

		// A filter: the two others, discarded.
		filter := url.Values{"csrf": {csrf}, "scope": {"filter"}, "class": {"too_large"}, "reason": {"obsolete orders"}}
		resp, body = op.post("/quarantine/discard", filter)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Discard 2 quarantined event(s)") {
			t.Fatalf("filter confirmation: %d\n%s", resp.StatusCode, body)
		}
		filter.Set("confirm", "yes")
		filter.Set("count", "2")
		resp, body = op.post("/quarantine/discard", filter)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "2 of 2 event(s) discarded") {
			t.Fatalf("discard: %d\n%s", resp.StatusCode, body)
		}
		for _, id := range ids[2:] {
			if got := state(t, s.st, id); got != store.StateDiscarded {
				t.Errorf("%s is %s after the discard, want discarded", id, got)
			}
		}
		p, err := s.st.ReadAuditLog(t.Context(), 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 4 {
			t.Fatalf("%d audit records, want 4", len(p.Entries))
		}
		for _, e := range p.Entries {
			if e.Actor != "console:alice" || e.Reason == "" {
				t.Errorf("audit record %+v: want actor console:alice and the reason", e)
			}
		}
		if body := mustGet(t, op, "/audit"); !strings.Contains(body, "obsolete orders") || !strings.Contains(body, "console:alice") {
			t.Errorf("the audit page lacks the actions:\n%s", body)
		}
		if n := strings.Count(mustGet(t, op, "/events?state=pending"), "state-pending"); n != 6 {
			t.Errorf("%d pending events listed, want 6 (2 retried and the 4 successors they and the discards released)", n)
		}
	})
}

// TestOpenConsole: without users the console asks nobody to sign in and
// says so on every page; its forms still need their CSRF token.
func TestOpenConsole(t *testing.T) {
	db := testenv.NewHeraldDatabase(t)
	ids := quarantineEvents(t, db, 1, "o")
	s := newSite(t, db, "", func(cfg *console.Config) { cfg.Users = nil })
	c := s.client()
	body := mustGet(t, c, "/")
	if !strings.Contains(body, "No authentication is configured") {
		t.Errorf("the open console does not say it is open")
	}
	resp, _ := c.post("/quarantine/retry", url.Values{"id": {ids[0]}, "reason": {"x"}, "confirm": {"yes"}, "count": {"1"}})
	if resp.StatusCode != http.StatusForbidden || state(t, s.st, ids[0]) != store.StateQuarantined {
		t.Errorf("a post without the CSRF token: %d", resp.StatusCode)
	}
}

// TestConfigRefusals: a bad configuration names every bad field.
func TestConfigRefusals(t *testing.T) {
	_, err := console.NewHandler(console.Config{Prefix: "herald", RefreshInterval: 1,
		Users: []console.User{{Name: "a b", Role: "admin", Secret: "short"}, {Name: "a b", Role: console.RoleOperator, Secret: "long-enough-secret"}}})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"Store: required", "Prefix:", "Users[0]: name", "role \"admin\"", "secret has 5 characters", "Users[1]", "RefreshInterval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "long-enough-secret") || strings.Contains(err.Error(), "short") && !strings.Contains(err.Error(), "secret has 5") {
		t.Errorf("a secret shows in %q", err)
	}
}

// TestParseUsers: the users file's lines, and errors naming the line.
func TestParseUsers(t *testing.T) {
	users, err := console.ParseUsers(strings.NewReader("# who\noperator alice  a secret with blanks \n\nread-only bob bob-secret-123\n"))
	if err != nil || len(users) != 2 || users[0].Secret != "a secret with blanks" || users[1].Role != console.RoleReadOnly {
		t.Errorf("users %v (%q), %v", users, users[0].Secret, err)
	}
	if _, err := console.ParseUsers(strings.NewReader("admin carol carol-secret-1\n")); err == nil || !strings.Contains(err.Error(), "line 1") ||
		strings.Contains(err.Error(), "carol-secret-1") {
		t.Errorf("a bad role: %v", err)
	}
	if _, err := console.ParseUsers(strings.NewReader("operator dave\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a line without a secret: %v", err)
	}
}
