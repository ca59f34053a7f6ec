package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConsoleAddressNeedsUsers: without users the console serves only a
// loopback address; any other is refused naming the flag and the remedy
// (exit 2).
func TestConsoleAddressNeedsUsers(t *testing.T) {
	tests := []struct {
		addr      string
		withUsers bool
		ok        bool
	}{
		{"127.0.0.1:8088", false, true},
		{"localhost:8088", false, true},
		{"[::1]:8088", false, true},
		{"0.0.0.0:8088", false, false},
		{":8088", false, false},
		{"10.1.2.3:8088", false, false},
		{"0.0.0.0:8088", true, true},
		{"no-port", true, false},
	}
	for _, tt := range tests {
		err := checkConsoleAddr(tt.addr, tt.withUsers)
		if (err == nil) != tt.ok {
			t.Errorf("--addr %s (users %v): %v", tt.addr, tt.withUsers, err)
		}
		if err != nil && tt.addr != "no-port" && !strings.Contains(err.Error(), "--users-file") {
			t.Errorf("--addr %s: %v does not say what to do", tt.addr, err)
		}
	}
	out, code := run(t, "console", "--addr", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(out, "needs authentication") {
		t.Errorf("herald console --addr 0.0.0.0:0: exit %d\n%s", code, out)
	}
	t.Setenv(consoleUsersEnv, "admin carol carol-secret-123")
	if out, code := run(t, "console"); code != exitUsage || !strings.Contains(out, consoleUsersEnv+": line 1") || strings.Contains(out, "carol-secret") {
		t.Errorf("a bad %s: exit %d\n%s", consoleUsersEnv, code, out)
	}
}

// TestConsoleCommandServes: herald console, with its users from the
// environment, serves the health endpoints openly and every page only
// after signing in, over HTTPS with --tls-cert-file/--tls-key-file (its
// session cookie then Secure); its log names no secret.
func TestConsoleCommandServes(t *testing.T) {
	d := testenv.NewHeraldDatabase(t)
	const secret = "operator-secret-canary"
	ca := testenv.NewCA(t, "console test CA")
	cert, key := ca.Issue(t, testenv.CertOptions{CommonName: "console", Hosts: []string{"127.0.0.1"}})
	p := testenv.StartProcess(t, testenv.ProcessOptions{
		Name: "herald-console", Path: testenv.HeraldBinary(t), Args: []string{"console", "--addr", "127.0.0.1:0", "--prefix", "/ops"},
		Env: []string{"HERALD_DATABASE_URL=" + d.DSN, consoleUsersEnv + "=operator alice " + secret, "HERALD_KAFKA_BROKERS=127.0.0.1:1",
			"HERALD_CONSOLE_TLS_CERT_FILE=" + cert, "HERALD_CONSOLE_TLS_KEY_FILE=" + key},
		DropEnv: []string{"HERALD_"},
	})
	p.WaitForLog(t, "console listening", 30*time.Second)
	var line struct {
		URL string `json:"url"`
	}
	for _, l := range strings.Split(p.Log(), "\n") {
		if strings.Contains(l, "console listening") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.HasPrefix(line.URL, "https://") {
		t.Fatalf("the console serves %s, want https", line.URL)
	}
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cl := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for path, want := range map[string]int{"healthz": 200, "readyz": 200, "": http.StatusSeeOther, "events": http.StatusSeeOther} {
		resp, err := cl.Get(line.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s%s: %d, want %d", line.URL, path, resp.StatusCode, want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, line.URL, nil)
	req.SetBasicAuth("alice", secret)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the overview with basic auth: %d", resp.StatusCode)
	}
	login, err := cl.PostForm(line.URL+"login", map[string][]string{"name": {"alice"}, "password": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	login.Body.Close()
	if c := login.Cookies(); login.StatusCode != http.StatusSeeOther || len(c) != 1 || !c[0].Secure || !c[0].HttpOnly || c[0].Path != "/ops/" {
		t.Errorf("sign-in over HTTPS: %d, cookies %v; want one Secure, HttpOnly cookie for /ops/", login.StatusCode, c)
	}
	if strings.Contains(p.Log(), secret) {
		t.Errorf("the secret shows in the console's log:\n%s", p.Log())
	}
}
