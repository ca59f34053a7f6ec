package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/testkit/testenv"
)

func newWarehouse(t *testing.T) *httptest.Server {
	t.Helper()
	db := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := server.Migrations.Up(ctx, db.DB); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{DB: db.DB, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

type response struct {
	status   int
	body     string
	replayed bool
}

func post(t *testing.T, base, key, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/operations", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(server.HeaderIdempotencyKey, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header.Get(server.HeaderReplayed) == "true"}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

func effects(t *testing.T, base string) int64 {
	t.Helper()
	var st server.Stats
	if code := getJSON(t, base+"/stats", &st); code != http.StatusOK {
		t.Fatalf("GET /stats: %d", code)
	}
	return st.Effects
}

const reserve = `{"action":"reserve","order_id":7,"items":[{"sku":"SKU-1","quantity":2}]}`

// TestIdempotencyKeys: a repeated key with the same body (even spaced
// differently) returns the first response and changes nothing; a reused key
// with a different body answers 422; bad requests answer 400 with a JSON
// error.
func TestIdempotencyKeys(t *testing.T) {
	ts := newWarehouse(t)
	first := post(t, ts.URL, "key-1", reserve)
	if first.status != http.StatusCreated || first.replayed {
		t.Fatalf("first request: %+v", first)
	}
	if effects(t, ts.URL) != 1 {
		t.Fatal("first request applied no effect")
	}
	tests := []struct {
		name         string
		key, body    string
		wantStatus   int
		wantReplayed bool
		wantFirst    bool // body equals the first response
	}{
		{"same key, same body", "key-1", reserve, http.StatusCreated, true, true},
		{"same key, same body spaced and reordered", "key-1",
			`{ "items": [ {"quantity":2, "sku":"SKU-1"} ], "order_id": 7, "action": "reserve" }`, http.StatusCreated, true, true},
		{"same key, different body", "key-1", `{"action":"release","order_id":7,"items":[{"sku":"SKU-1","quantity":2}]}`, http.StatusUnprocessableEntity, false, false},
		{"same key, different quantity", "key-1", `{"action":"reserve","order_id":7,"items":[{"sku":"SKU-1","quantity":3}]}`, http.StatusUnprocessableEntity, false, false},
		{"no key", "", reserve, http.StatusBadRequest, false, false},
		{"not json", "key-2", `{"action":`, http.StatusBadRequest, false, false},
		{"unknown action", "key-3", `{"action":"steal","order_id":7,"items":[{"sku":"SKU-1","quantity":2}]}`, http.StatusBadRequest, false, false},
		{"no items", "key-4", `{"action":"reserve","order_id":7,"items":[]}`, http.StatusBadRequest, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := post(t, ts.URL, tt.key, tt.body)
			if got.status != tt.wantStatus || got.replayed != tt.wantReplayed {
				t.Errorf("status %d replayed %v, want %d %v (body %s)", got.status, got.replayed, tt.wantStatus, tt.wantReplayed, got.body)
			}
			if tt.wantFirst && got.body != first.body {
				t.Errorf("body %s, want the first response %s", got.body, first.body)
			}
			if got.status >= 400 {
				var e map[string]string
				if json.Unmarshal([]byte(got.body), &e) != nil || e["error"] == "" {
					t.Errorf("error body %q is not {\"error\":...}", got.body)
				}
			}
			if n := effects(t, ts.URL); n != 1 {
				t.Errorf("effects = %d, want still 1", n)
			}
		})
	}

	var rec server.KeyRecord
	if code := getJSON(t, ts.URL+"/v1/operations/key-1", &rec); code != http.StatusOK {
		t.Fatalf("GET key: %d", code)
	}
	if rec.Effects != 1 || rec.Replays != 2 || rec.StatusCode != http.StatusCreated {
		t.Errorf("key record %+v: want 1 effect, 2 replays, status 201", rec)
	}
	var st server.Stats
	getJSON(t, ts.URL+"/stats", &st)
	if st != (server.Stats{Effects: 1, Requests: 1, Replays: 2, Conflicts: 2}) {
		t.Errorf("stats %+v", st)
	}
	var missing map[string]string
	if code := getJSON(t, ts.URL+"/v1/operations/nope", &missing); code != http.StatusNotFound || missing["error"] == "" {
		t.Errorf("GET unknown key: %d %v", code, missing)
	}
	var health map[string]string
	if code := getJSON(t, ts.URL+"/healthz", &health); code != http.StatusOK || health["status"] != "ok" {
		t.Errorf("healthz: %d %v", code, health)
	}
}

// TestConcurrentRequestsWithOneKey: ten simultaneous requests with one key
// apply one effect and all get the same response.
func TestConcurrentRequestsWithOneKey(t *testing.T) {
	ts := newWarehouse(t)
	var wg sync.WaitGroup
	responses := make([]response, 10)
	for i := range responses {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/operations", bytes.NewBufferString(reserve))
			req.Header.Set(server.HeaderIdempotencyKey, "shared")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			responses[i] = response{resp.StatusCode, string(b), resp.Header.Get(server.HeaderReplayed) == "true"}
		})
	}
	wg.Wait()
	replays := 0
	for _, r := range responses {
		if r.status != http.StatusCreated || r.body != responses[0].body {
			t.Errorf("response %+v differs from %+v", r, responses[0])
		}
		if r.replayed {
			replays++
		}
	}
	if replays != 9 || effects(t, ts.URL) != 1 {
		t.Errorf("%d replays, %d effects; want 9 and 1", replays, effects(t, ts.URL))
	}
}

// TestMultiByteSKU: the warehouse counts a SKU in characters, as the orders
// API and the inventory consumer do (contract.ValidateSKU): 64 emoji are a
// SKU, 65 are not.
func TestMultiByteSKU(t *testing.T) {
	ts := newWarehouse(t)
	op := func(sku string) string {
		return `{"action":"reserve","order_id":7,"items":[{"sku":"` + sku + `","quantity":1}]}`
	}
	if got := post(t, ts.URL, "emoji-64", op(strings.Repeat("📦", 64))); got.status != http.StatusCreated {
		t.Errorf("64-emoji SKU: %d %s, want 201", got.status, got.body)
	}
	if got := post(t, ts.URL, "emoji-65", op(strings.Repeat("📦", 65))); got.status != http.StatusBadRequest {
		t.Errorf("65-emoji SKU: %d %s, want 400", got.status, got.body)
	}
}
