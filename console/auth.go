package console

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ParseUsers reads users, one a line: role, name and secret separated by
// blanks (the secret is the rest of the line, so it may hold blanks too),
// as in
//
//	# role      name   secret
//	operator    alice  correct-horse-battery-staple
//	read-only   bob    another-long-secret
//
// Blank lines and lines starting with # are skipped. An error names the
// line, never the secret.
func ParseUsers(r io.Reader) ([]User, error) {
	var users []User
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: want a role, a name and a secret", n)
		}
		role, name := Role(fields[0]), fields[1]
		secret := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, fields[0])), name))
		if role != RoleReadOnly && role != RoleOperator {
			return nil, fmt.Errorf("line %d: role %q is neither %s nor %s", n, fields[0], RoleReadOnly, RoleOperator)
		}
		users = append(users, User{Name: name, Role: role, Secret: secret})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// principal is who a request acts as.
type principal struct {
	name string
	role Role
	// csrfKey binds the CSRF token to the credential the request came
	// with (a session, a user's basic auth or token, or nobody).
	csrfKey string
}

func (p principal) operator() bool { return p.role == RoleOperator }

// actor is the name the audit log records.
func (p principal) actor() string { return "console:" + p.name }

type session struct {
	user    User
	expires time.Time
}

// auth checks credentials and keeps the sessions of the login page.
type auth struct {
	users []User
	ttl   time.Duration
	// key signs CSRF tokens; new at every start (a restart logs everyone
	// out, as the sessions live in memory).
	key []byte

	mu       sync.Mutex
	sessions map[string]session
}

func newAuth(users []User, ttl time.Duration) *auth {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	return &auth{users: slices.Clone(users), ttl: ttl, key: key, sessions: map[string]session{}}
}

// open: no users configured, everyone is an operator.
func (a *auth) open() bool { return len(a.users) == 0 }

// digest makes secrets of any length comparable in constant time.
func digest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// check finds the user with name and secret ("" name: any user with the
// secret, for a bearer token), comparing every user's name and secret in
// constant time so the answer's timing tells nothing.
func (a *auth) check(name, secret string) (User, bool) {
	var found User
	ok := 0
	nd, sd := digest(name), digest(secret)
	for _, u := range a.users {
		nameOK := 1
		if name != "" {
			nameOK = subtle.ConstantTimeCompare(digest(u.Name), nd)
		}
		match := nameOK & subtle.ConstantTimeCompare(digest(u.Secret), sd)
		if match == 1 && ok == 0 {
			found, ok = u, 1
		}
	}
	return found, ok == 1
}

const sessionCookie = "herald_console"

// identify returns who r comes from: a session cookie, basic auth or a
// bearer token. bad is true when r carried credentials that are wrong.
func (a *auth) identify(r *http.Request) (p principal, ok, bad bool) {
	if a.open() {
		return principal{name: "anonymous", role: RoleOperator, csrfKey: "open"}, true, false
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if token, isBearer := strings.CutPrefix(h, "Bearer "); isBearer {
			u, ok := a.check("", strings.TrimSpace(token))
			return principal{name: u.Name, role: u.Role, csrfKey: "token:" + u.Name}, ok, !ok
		}
		if name, secret, isBasic := r.BasicAuth(); isBasic {
			u, ok := a.check(name, secret)
			return principal{name: u.Name, role: u.Role, csrfKey: "basic:" + u.Name}, ok, !ok
		}
		return principal{}, false, true
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return principal{}, false, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, found := a.sessions[c.Value]
	if !found || time.Now().After(s.expires) {
		delete(a.sessions, c.Value)
		return principal{}, false, true
	}
	return principal{name: s.user.Name, role: s.user.Role, csrfKey: "session:" + c.Value}, true, false
}

// login starts a session for u and returns its id.
func (a *auth) login(u User) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, s := range a.sessions { // forget the expired ones
		if now.After(s.expires) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = session{user: u, expires: now.Add(a.ttl)}
	return id
}

// logout ends the session of r, if any.
func (a *auth) logout(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		a.mu.Lock()
		delete(a.sessions, c.Value)
		a.mu.Unlock()
	}
}

// csrfToken is the token every form of p's pages carries.
func (a *auth) csrfToken(p principal) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte("csrf\x00" + p.csrfKey))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK says whether a form's token is p's.
func (a *auth) csrfOK(p principal, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(a.csrfToken(p)))
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}
