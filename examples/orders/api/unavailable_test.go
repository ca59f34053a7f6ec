package api_test

import (
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/store/mysql"
)

// TestDatabaseUnreachableIsRetryable: with the database down, a write is
// answered 503 unavailable with Retry-After, so clients know to retry with
// their Idempotency-Key, not 500.
func TestDatabaseUnreachableIsRetryable(t *testing.T) {
	dsn, err := mysql.NormalizeDSN("herald:herald@tcp(127.0.0.1:1)/herald?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn) // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv, err := api.New(api.Config{DB: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/orders", "application/json",
		strings.NewReader(`{"customer_id":42,"items":[{"sku":"SKU-1","quantity":1,"unit_price":"1.00"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error api.ErrorDetail `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != api.CodeUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("database down: %d %+v Retry-After %q; want 503 %s with Retry-After", resp.StatusCode, body.Error,
			resp.Header.Get("Retry-After"), api.CodeUnavailable)
	}
}
