package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/herald-outbox/herald/internal/redact"
	"github.com/herald-outbox/herald/status"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// contentSecurityPolicy allows nothing but the console's own script,
// style sheet and images, no inline code of any kind, no framing, and
// forms only to itself.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Handler is the console: an http.Handler serving its pages under
// Config.Prefix.
type Handler struct {
	cfg     Config
	auth    *auth
	pages   map[string]*template.Template
	mux     *http.ServeMux
	replays *replays
	// overview caches the last report briefly, so many open pages
	// refreshing cost the database one reading.
	overviewMu sync.Mutex
	overview   *overviewCache
}

type overviewCache struct {
	at  time.Time
	rep status.Report
	err error
}

// NewHandler returns the console for cfg, to serve with net/http or to
// mount under cfg.Prefix in a server of one's own:
//
//	h, err := console.NewHandler(console.Config{Store: st, Prefix: "/herald", Users: users})
//	mux.Handle("/herald/", h)
func NewHandler(cfg Config) (*Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	h := &Handler{cfg: cfg, auth: newAuth(cfg.Users, cfg.SessionTTL), pages: map[string]*template.Template{}, replays: newReplays()}
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

func (h *Handler) parseTemplates() error {
	funcs := template.FuncMap{
		"age": status.Age,
		"old": func(d time.Duration) string {
			if d <= 0 {
				return "-"
			}
			return status.Age(d) + " old"
		},
		"time":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"timeptr":  func(t *time.Time) string { return formatPtr(t) },
		"scrub":    func(s string) string { return redact.Secrets(s) },
		"short":    shorten,
		"path":     func(p string) string { return h.cfg.Prefix + p },
		"query":    func(p string, kv ...string) string { return h.cfg.Prefix + p + "?" + queryOf(kv...) },
		"duration": func(d time.Duration) string { return d.Round(time.Second).String() },
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return fmt.Errorf("console: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, name)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", page, err)
		}
		h.pages[page] = t
	}
	return nil
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	m.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		// The assets, never a listing of them: a directory is not found.
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	m.HandleFunc("GET /readyz", h.readyz)
	m.HandleFunc("GET /login", h.loginPage)
	m.HandleFunc("POST /login", h.loginSubmit)
	m.HandleFunc("POST /logout", h.signedIn(h.logout))
	m.HandleFunc("GET /{$}", h.signedIn(h.overviewPage))
	m.HandleFunc("GET /fragment/overview", h.signedIn(h.overviewFragment))
	m.HandleFunc("GET /events", h.signedIn(h.eventsPage))
	m.HandleFunc("GET /events/{id}", h.signedIn(h.eventPage))
	m.HandleFunc("GET /timeline", h.signedIn(h.timelinePage))
	m.HandleFunc("GET /quarantine", h.signedIn(h.quarantinePage))
	m.HandleFunc("POST /quarantine/{action}", h.signedIn(h.operatorOnly(h.quarantineAction)))
	m.HandleFunc("GET /replays", h.signedIn(h.replaysPage))
	m.HandleFunc("GET /fragment/replays", h.signedIn(h.replaysFragment))
	m.HandleFunc("POST /replays/start", h.signedIn(h.operatorOnly(h.replayStart)))
	m.HandleFunc("POST /replays/cancel", h.signedIn(h.operatorOnly(h.replayCancel)))
	m.HandleFunc("GET /audit", h.signedIn(h.auditPage))
	h.mux = m
}

// ServeHTTP serves the console: security headers on every answer,
// cross-origin state changes refused, the prefix stripped.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	if h.cfg.Prefix != "" {
		rest, ok := strings.CutPrefix(r.URL.Path, h.cfg.Prefix)
		if !ok || rest != "" && !strings.HasPrefix(rest, "/") {
			http.NotFound(w, r)
			return
		}
		if rest == "" {
			http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusFound)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = rest, ""
		r = r2
	}
	// A browser says where a request comes from (Sec-Fetch-Site, Origin):
	// a state change another site's page asks for is refused before any
	// handler, on top of the forms' CSRF tokens.
	if err := crossOrigin.Check(r); err != nil {
		h.fail(w, r, http.StatusForbidden, "refused: a cross-origin request may not change anything")
		return
	}
	h.mux.ServeHTTP(w, r)
}

var crossOrigin = http.NewCrossOriginProtection()

// signedIn serves next to signed-in users; others are sent to the login
// page (a request with wrong credentials gets 401).
func (h *Handler) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok, bad := h.auth.identify(r)
		if !ok {
			if bad && r.Header.Get("Authorization") != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="herald console", charset="UTF-8"`)
				h.fail(w, r, http.StatusUnauthorized, "wrong credentials")
				return
			}
			if r.Method == http.MethodGet && r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/fragment/") {
				http.Redirect(w, r, h.cfg.Prefix+"/login?"+url.Values{"next": {r.URL.RequestURI()}}.Encode(), http.StatusSeeOther)
				return
			}
			if r.Method == http.MethodGet && r.URL.Path == "/" {
				http.Redirect(w, r, h.cfg.Prefix+"/login", http.StatusSeeOther)
				return
			}
			h.fail(w, r, http.StatusUnauthorized, "sign in first")
			return
		}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				h.fail(w, r, http.StatusBadRequest, "malformed form")
				return
			}
			if !h.auth.csrfOK(p, r.PostForm.Get("csrf")) {
				h.fail(w, r, http.StatusForbidden, "refused: the form's CSRF token is missing or wrong; reload the page and try again")
				return
			}
		}
		next(w, r.WithContext(withPrincipal(r.Context(), p)))
	}
}

// operatorOnly refuses read-only users before anything is read or
// changed.
func (h *Handler) operatorOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalOf(r); !p.operator() {
			h.cfg.Logger.Warn("console: action refused to a read-only user", "user", p.name, "path", r.URL.Path)
			h.fail(w, r, http.StatusForbidden, "refused: "+p.name+" is read-only; actions need the operator role")
			return
		}
		next(w, r)
	}
}

// view is what every page's layout needs.
type view struct {
	Title     string
	Page      string
	User      string
	Role      Role
	Operator  bool
	Open      bool
	CSRF      string
	Prefix    string
	Refresh   int
	Error     string
	Flash     string
	Data      any
	Generated time.Time
}

func (h *Handler) view(r *http.Request, page, title string, data any) view {
	p := principalOf(r)
	return view{Title: title, Page: page, User: p.name, Role: p.role, Operator: p.operator(), Open: h.auth.open(),
		CSRF: h.auth.csrfToken(p), Prefix: h.cfg.Prefix, Refresh: int(h.cfg.RefreshInterval / time.Second),
		Data: data, Generated: time.Now().UTC()}
}

// render writes page with v; a template failure is the console's fault,
// logged and answered 500 without details.
func (h *Handler) render(w http.ResponseWriter, code int, page string, v any) {
	t, name := h.pages[page], "layout.html"
	if rest, ok := strings.CutPrefix(page, "fragment-"); ok {
		// A page's live part, defined in the page's own file.
		t, name = h.pages[rest], page
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		h.cfg.Logger.Error("console: render", "page", page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// fail answers an error page saying msg (which must hold no secret).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	v := view{Title: http.StatusText(code), Page: "error", Prefix: h.cfg.Prefix, Error: msg, Generated: time.Now().UTC()}
	if p := principalOf(r); p.name != "" {
		v.User, v.Role, v.Operator, v.CSRF = p.name, p.role, p.operator(), h.auth.csrfToken(p)
	}
	h.render(w, code, "error", v)
}

// storeError answers a failed read or action: the database's error is
// logged (scrubbed) and the page says what failed, without it.
func (h *Handler) storeError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	h.cfg.Logger.Error("console: "+what, "error", redact.Secrets(err.Error()), "path", r.URL.Path)
	h.fail(w, r, http.StatusInternalServerError, what+" failed: the database did not answer as expected (see the console's log)")
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := h.cfg.Store.Ping(ctx); err != nil {
		h.cfg.Logger.Warn("console: database unreachable", "error", redact.Secrets(err.Error()))
		http.Error(w, "database unreachable", http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

// Login.

type loginData struct {
	Next  string
	Name  string
	Error string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.auth.open() {
		http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, "login", view{Title: "Sign in", Page: "login", Prefix: h.cfg.Prefix,
		Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}, Generated: time.Now().UTC()})
}

func (h *Handler) loginSubmit(w http.ResponseWriter, r *http.Request) {
	if h.auth.open() {
		http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
		return
	}
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "malformed form")
		return
	}
	name, secret := r.PostForm.Get("name"), r.PostForm.Get("password")
	next := safeNext(r.PostForm.Get("next"))
	u, ok := h.auth.check(name, secret)
	if !ok || name == "" {
		h.cfg.Logger.Warn("console: sign-in refused", "user", shorten(name, 64), "remote", r.RemoteAddr)
		h.render(w, http.StatusUnauthorized, "login", view{Title: "Sign in", Page: "login", Prefix: h.cfg.Prefix,
			Data: loginData{Next: next, Name: name, Error: "wrong user name or password"}, Generated: time.Now().UTC()})
		return
	}
	id := h.auth.login(u)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: h.cfg.Prefix + "/", HttpOnly: true,
		Secure: h.cfg.SecureCookies, SameSite: http.SameSiteStrictMode, MaxAge: int(h.cfg.SessionTTL / time.Second)})
	h.cfg.Logger.Info("console: signed in", "user", u.Name, "role", string(u.Role))
	http.Redirect(w, r, h.cfg.Prefix+next, http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	h.auth.logout(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: h.cfg.Prefix + "/", HttpOnly: true,
		Secure: h.cfg.SecureCookies, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, h.cfg.Prefix+"/login", http.StatusSeeOther)
}

// safeNext keeps a post-login destination inside the console: a path of
// it, never another site, its path and query encoded again so that the
// Location header carries no character a URL may not hold.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	out := u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.Query().Encode()
	}
	return out
}

// Helpers of the templates.

func formatPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func queryOf(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v.Encode()
}

func sortStrings(s []string) { sort.Strings(s) }

// logAction records an operator's action in the console's log (the audit
// log in the database has it too).
func (h *Handler) logAction(r *http.Request, action string, attrs ...any) {
	p := principalOf(r)
	h.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "console: "+action,
		append([]slog.Attr{slog.String("user", p.name)}, argsToAttrs(attrs)...)...)
}

func argsToAttrs(args []any) []slog.Attr {
	var out []slog.Attr
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		out = append(out, slog.Any(k, args[i+1]))
	}
	return out
}
