package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// service is the API served by httptest over a fresh database with both
// schemas applied.
type service struct {
	t   testing.TB
	db  *testenv.Database
	url string
}

func newService(t testing.TB, cfg api.Config) *service {
	t.Helper()
	return newServiceOn(t, testenv.MariaDB, cfg)
}

// newServiceOn is newService on a database of server.
func newServiceOn(t testing.TB, server testenv.Server, cfg api.Config) *service {
	t.Helper()
	d := testenv.NewDatabaseOn(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.Migrate(ctx, d.DB); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	d.DB.SetMaxOpenConns(40)
	cfg.DB, cfg.Dialect = d.DB, d.Dialect
	cfg.Logger = slog.New(slog.NewJSONHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &service{t: t, db: d, url: ts.URL}
}

// response is one HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; headers are name, value pairs.
func (s *service) do(method, path, body string, headers ...string) response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// decode decodes the answer's body into v, failing on unknown fields so the
// tests notice when the API's answers change shape.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %d answer %s: %v", r.status, r.body, err)
	}
}

func (r response) errorDetail(t testing.TB) api.ErrorDetail {
	t.Helper()
	var e api.ErrorResponse
	r.decode(t, &e)
	return e.Error
}

func (r response) created(t testing.TB) api.OrderResponse {
	t.Helper()
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s, want 201", r.status, r.body)
	}
	var o api.OrderResponse
	r.decode(t, &o)
	return o
}

// tables are every table a request may write.
var tables = []string{"orders", "order_items", "outbox_events", "outbox_aggregates", "idempotency_keys"}

// rowCounts counts the rows of every table.
func (s *service) rowCounts() map[string]int {
	s.t.Helper()
	counts := map[string]int{}
	for _, table := range tables {
		var n int
		if err := s.db.DB.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			s.t.Fatalf("count %s: %v", table, err)
		}
		counts[table] = n
	}
	return counts
}

// assertNoRowsWritten fails when any table has rows other than before.
func (s *service) assertNoRowsWritten(before map[string]int) {
	s.t.Helper()
	after := s.rowCounts()
	for _, table := range tables {
		if after[table] != before[table] {
			s.t.Errorf("table %s: %d rows, had %d: the request left rows behind", table, after[table], before[table])
		}
	}
}

// outboxEvent is one outbox_events row.
type outboxEvent struct {
	id, aggregateType, aggregateID, eventType string
	seq                                       uint64
	version                                   int
	payload                                   []byte
	headers                                   []byte
}

// events returns the outbox events of one order, in aggregate_seq order.
func (s *service) events(orderID int64) []outboxEvent {
	s.t.Helper()
	rows, err := s.db.DB.Query(s.db.SQL(`SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
		payload, headers FROM outbox_events WHERE aggregate_type = 'order' AND aggregate_id = ? ORDER BY aggregate_seq`),
		strconv.FormatInt(orderID, 10))
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxEvent
	for rows.Next() {
		var e outboxEvent
		if err := rows.Scan(&e.id, &e.aggregateType, &e.aggregateID, &e.seq, &e.eventType, &e.version, &e.payload, &e.headers); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	return out
}

// orderExists says whether the orders table has the row id.
func (s *service) orderExists(id int64) bool {
	s.t.Helper()
	var n int
	if err := s.db.DB.QueryRow(s.db.SQL("SELECT COUNT(*) FROM orders WHERE id = ?"), id).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n > 0
}

// jsonValue decodes b generically, numbers as json.Number, for comparing
// documents independently of field order and spacing.
func jsonValue(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}
