package console_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/herald-outbox/herald/console"
	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/relay"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// screenshotsEnv names the folder the browser test writes each page's
// screenshot to (docs/console to refresh the README's); unset, it writes
// none, so a test run leaves the tree as it was.
const screenshotsEnv = "HERALD_CONSOLE_SCREENSHOTS"

// browser starts Debian's chromium headless (stack/up.sh installs it)
// with the flags this machine needs, in a fresh profile, and returns a
// context of a new tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make up installs it): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1360, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(cancelTab)
	// The first run starts the browser and must not carry a deadline
	// (it would stop the browser); each step later gets one.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// stepTimeout bounds one group of browser steps.
const stepTimeout = 30 * time.Second

// run runs browser steps, failing t with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, page(ctx))
	}
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, page(ctx))
	}
	return v
}

// page is the current page's body, for a failure's message.
func page(ctx context.Context) string {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return shorten(body, 3000)
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// screenshot saves the page as name.png when screenshotsEnv asks.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// signIn fills the login page.
func signIn(t *testing.T, ctx context.Context, base string, u console.User) {
	t.Helper()
	run(t, ctx, "sign in as "+u.Name,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("name")),
		chromedp.SendKeys(chromedp.ID("name"), u.Name),
		chromedp.SendKeys(chromedp.ID("password"), u.Secret),
		chromedp.Click(chromedp.ID("sign-in")),
	)
}

// post sends a form from inside the page, as a forged form or a script on
// the page would: same origin, the session's cookie, the fields given.
// It returns the answer's status.
func post(t *testing.T, ctx context.Context, path string, fields map[string]string) int {
	t.Helper()
	body, _ := json.Marshal(fields)
	js := fmt.Sprintf(`fetch(%q, {method: "POST", credentials: "same-origin", body: new URLSearchParams(%s)}).then(r => r.status)`, path, body)
	return value(t, ctx, "post "+path, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
}

// TestBrowser drives the console in a real browser on both databases: an
// operator signs in, finds the event a real failure quarantined (a record
// too large for its topic), retries it with a reason once the topic takes
// it, and the event arrives on the topic (read back with kcat); a
// read-only user sees no action and a post forged in their session is
// refused (403) and changes nothing; a post without the CSRF token is
// refused; a wrong password is refused. With HERALD_CONSOLE_SCREENSHOTS
// set it saves each page.
func TestBrowser(t *testing.T) {
	testenv.OnEachServer(t, func(t *testing.T, server testenv.Server) {
		shots := server == testenv.MariaDB
		db := testenv.NewHeraldDatabaseOn(t, server)
		brokers := testenv.KafkaBrokers(t)
		small := "20000"
		topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3, Configs: map[string]*string{"max.message.bytes": &small}})
		ctx := context.Background()

		pad := make([]byte, 40_000) // random: compression cannot shrink it under the limit
		rand.Read(pad)
		big, _ := json.Marshal(map[string]string{"note": base64.StdEncoding.EncodeToString(pad)})
		events := []outbox.Event{{AggregateType: "order", AggregateID: "9182", EventType: "order.created", SchemaVersion: 1, Payload: big},
			{AggregateType: "order", AggregateID: "9182", EventType: "order.paid", SchemaVersion: 1, Payload: json.RawMessage(`{"order_id":9182}`)}}
		for i := range 8 {
			events = append(events, outbox.Event{AggregateType: "order", AggregateID: fmt.Sprint(9200 + i), EventType: "order.created",
				SchemaVersion: 1, Payload: json.RawMessage(fmt.Sprintf(`{"order_id":%d,"total_amount":"19.90"}`, 9200+i))})
		}
		ids := db.AddEvents(t, events...)
		poison := ids[0]

		producer, err := kafka.NewProducer(kafka.ProducerConfig{Brokers: brokers, DeliveryTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer producer.Close()
		st := db.Store()
		rl, err := relay.New(relay.Config{ID: "relay-browser", Topics: map[string]string{"order": topic}, Lease: 15 * time.Second,
			PollInterval: 50 * time.Millisecond, BackoffBase: 100 * time.Millisecond}, st, producer)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rl.Run(runCtx) }()
		stopRelay := sync.OnceFunc(func() { stop(); <-done })
		t.Cleanup(stopRelay)
		testenv.Eventually(t, time.Minute, "the oversized event quarantined, its successor held, the rest published", func() bool {
			b, err := st.ReadBacklog(ctx)
			return err == nil && b.Quarantined == 1 && b.Held == 1 && b.Ready+b.BackingOff == 0
		})

		adm := testenv.NewAdmin(t, brokers)
		s := newSite(t, db, "/herald", func(cfg *console.Config) {
			cfg.RefreshInterval = time.Second
			cfg.Kafka = &console.KafkaConfig{Admin: adm, Topics: []string{topic}}
			cfg.Replay = &console.ReplayConfig{Producer: producer, Admin: adm, Topics: map[string]string{"order": topic}}
		})
		b := browser(t)

		// A wrong password: refused, still on the login page.
		wrong := operator
		wrong.Secret = "not-" + operator.Secret
		signIn(t, b, s.base, wrong)
		run(t, b, "the refusal", chromedp.WaitVisible(chromedp.ID("login-error")))
		msg := value(t, b, "the refusal's text", chromedp.Text(chromedp.ID("login-error")))
		if msg != "wrong user name or password" {
			t.Errorf("wrong password: %q", msg)
		}
		if shots {
			screenshot(t, b, "login")
		}

		// The operator finds the quarantined event and retries it.
		signIn(t, b, s.base, operator)
		run(t, b, "the overview", chromedp.WaitVisible(chromedp.ID("quarantined")))
		quarantined := value(t, b, "the quarantined count", chromedp.Text(chromedp.ID("quarantined")))
		if quarantined != "1" {
			t.Errorf("the overview shows %q quarantined, want 1", quarantined)
		}
		// The live part refreshes itself (console.js, the only script the
		// Content-Security-Policy allows): its reading time moves.
		first := value(t, b, "the reading time", chromedp.Text(chromedp.ID("read-at")))
		run(t, b, "a live refresh", chromedp.Poll[chromedp.Void](`document.getElementById("read-at").textContent !== `+strconv.Quote(first),
			chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
		if shots {
			screenshot(t, b, "overview")
		}
		run(t, b, "the quarantine", chromedp.Click(chromedp.CSS(`a[href="/herald/quarantine"]`)),
			chromedp.WaitVisible(chromedp.ID("quarantined")))
		if shots {
			screenshot(t, b, "quarantine")
		}
		run(t, b, "the event", chromedp.Click(chromedp.CSS(`#quarantined a[href="/herald/events/`+poison+`"]`)),
			chromedp.WaitVisible(chromedp.ID("retry")))
		if shots {
			screenshot(t, b, "event")
		}
		run(t, b, "the timeline", chromedp.Navigate(s.base+"/timeline?aggregate_type=order&aggregate_id=9182"),
			chromedp.WaitVisible(chromedp.ID("timeline")))
		timeline := value(t, b, "the timeline's text", chromedp.Text(chromedp.ID("timeline")))
		if !strings.Contains(timeline, "holds the rest") || !strings.Contains(timeline, "held") {
			t.Errorf("the timeline does not show the head and the held event:\n%s", timeline)
		}
		if shots {
			screenshot(t, b, "timeline")
		}

		// The cause fixed: the topic takes records of up to 1 MB.
		bigger := "1000000"
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &bigger}}, topic)
		if err == nil {
			_, err = resp.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("raise max.message.bytes: %v", err)
		}
		run(t, b, "retry with a reason",
			chromedp.Navigate(s.base+"/events/"+poison), chromedp.WaitVisible(chromedp.ID("retry-reason")),
			chromedp.SendKeys(chromedp.ID("retry-reason"), "max.message.bytes raised to 1 MB"),
			chromedp.Click(chromedp.ID("retry")),
			chromedp.WaitVisible(chromedp.ID("confirm")))
		count := value(t, b, "the count to confirm", chromedp.Text(chromedp.ID("confirm-count")))
		if !strings.Contains(count, "Retry 1 quarantined event(s)") {
			t.Errorf("confirmation: %q", count)
		}
		if shots {
			screenshot(t, b, "confirm")
		}
		run(t, b, "confirm", chromedp.Click(chromedp.ID("confirm")),
			chromedp.WaitVisible(chromedp.ID("outcome")))
		outcome := value(t, b, "the outcome", chromedp.Text(chromedp.ID("outcome")))
		if !strings.Contains(outcome, "1 of 1 event(s) retried") {
			t.Errorf("outcome: %q", outcome)
		}
		testenv.Eventually(t, time.Minute, "the retried event and its successor published", func() bool {
			return state(t, st, poison) == store.StatePublished && state(t, st, ids[1]) == store.StatePublished
		})
		records, err := verify.ReadTopic(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, r := range records {
			seen = append(seen, r.HeaderEventID)
		}
		if !slices.Contains(seen, poison) || !slices.Contains(seen, ids[1]) {
			t.Errorf("the retried event %s (or its successor) is not on %s: %v", poison, topic, seen)
		}
		if shots {
			run(t, b, "the events", chromedp.Navigate(s.base+"/events"), chromedp.WaitVisible(chromedp.ID("events")))
			screenshot(t, b, "events")
			run(t, b, "the audit log", chromedp.Navigate(s.base+"/audit"), chromedp.WaitVisible(chromedp.ID("audit")))
			screenshot(t, b, "audit")
			run(t, b, "the replays", chromedp.Navigate(s.base+"/replays"), chromedp.WaitVisible(chromedp.ID("start-replay")))
			screenshot(t, b, "replays")
		}
		// A post without the CSRF token, from the operator's own page, on
		// an event quarantined with the relay stopped (its buckets free).
		stopRelay()
		second := quarantineEvents(t, db, 1, "csrf")[0]
		if code := post(t, b, s.base+"/quarantine/discard", map[string]string{"id": second, "reason": "x", "confirm": "yes", "count": "1"}); code != 403 {
			t.Errorf("a post without the CSRF token: %d, want 403", code)
		}

		// A read-only user: no action on the page; a post forged in the
		// session, with its own valid token, refused.
		run(t, b, "sign out", chromedp.Click(chromedp.CSS(`button.link`)), chromedp.WaitVisible(chromedp.ID("name")))
		signIn(t, b, s.base, readOnly)
		run(t, b, "the event as read-only", chromedp.WaitVisible(chromedp.ID("quarantined")),
			chromedp.Navigate(s.base+"/events/"+second), chromedp.WaitVisible(chromedp.ID("state")))
		retryButtons := value(t, b, "actions on the event",
			chromedp.Evaluate[int](`document.querySelectorAll("#actions, #retry, #discard, #show-payload").length`))
		run(t, b, "the quarantine as read-only", chromedp.Navigate(s.base+"/quarantine"), chromedp.WaitVisible(chromedp.ID("quarantined")))
		selectButtons := value(t, b, "actions on the quarantine",
			chromedp.Evaluate[int](`document.querySelectorAll("#retry-selected, #discard-selected, input[type=checkbox], #bulk-filter").length`))
		csrf := value(t, b, "the session's CSRF token", chromedp.Evaluate[string](`document.querySelector("input[name=csrf]").value`))
		if retryButtons != 0 || selectButtons != 0 {
			t.Errorf("a read-only user sees %d action(s) on the event and %d on the quarantine", retryButtons, selectButtons)
		}
		if code := post(t, b, s.base+"/quarantine/discard", map[string]string{"csrf": csrf, "id": second, "reason": "forged",
			"confirm": "yes", "count": "1"}); code != 403 {
			t.Errorf("a read-only user's forged post: %d, want 403", code)
		}
		if got := state(t, st, second); got != store.StateQuarantined {
			t.Errorf("after the refused posts the event is %s, want quarantined", got)
		}
		if n := auditCount(t, st); n != 1 {
			t.Errorf("%d audit records, want the one retry", n)
		}
	})
}
