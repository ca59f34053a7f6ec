package api_test

import (
	"bytes"
	"net/http"
	"sync"
	"testing"

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestIdempotencyKey: a retry with the same key and the same order gets the
// first answer and creates nothing; the same key with another order is
// refused; concurrent requests with one key create one order. On each
// database server: on PostgreSQL the taken key aborts the transaction.
func TestIdempotencyKey(t *testing.T) {
	testenv.OnEachServer(t, testIdempotencyKey)
}

func testIdempotencyKey(t *testing.T, server testenv.Server) {
	s := newServiceOn(t, server, api.Config{})

	t.Run("retry returns the first order", func(t *testing.T) {
		first := s.do("POST", "/orders", validOrder, "Idempotency-Key", "retry-1")
		created := first.created(t)
		before := s.rowCounts()
		// The same order spelled differently (key order, spacing, "0.50").
		respelled := `{ "items":[{"unit_price":"9.99","quantity":2,"sku":"SKU-1"},{"sku":"SKU-2","quantity":1,"unit_price":"0.50"}],
			"customer_id":42 }`
		for _, body := range []string{validOrder, respelled} {
			retry := s.do("POST", "/orders", body, "Idempotency-Key", "retry-1")
			if retry.status != http.StatusCreated || !bytes.Equal(retry.body, first.body) {
				t.Errorf("retry: %d %s, want 201 %s", retry.status, retry.body, first.body)
			}
			if retry.header.Get(api.ReplayedHeader) != "true" {
				t.Errorf("retry lacks %s: true", api.ReplayedHeader)
			}
		}
		s.assertNoRowsWritten(before)
		if n := len(s.events(created.OrderID)); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
	})

	t.Run("same key with another order is refused", func(t *testing.T) {
		s.do("POST", "/orders", validOrder, "Idempotency-Key", "reused-1").created(t)
		before := s.rowCounts()
		other := `{"customer_id":43,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"}]}`
		resp := s.do("POST", "/orders", other, "Idempotency-Key", "reused-1")
		if resp.status != http.StatusUnprocessableEntity {
			t.Fatalf("%d %s, want 422", resp.status, resp.body)
		}
		if d := resp.errorDetail(t); d.Code != api.CodeIdempotencyKeyReused || d.Field != api.IdempotencyKeyHeader {
			t.Errorf("error %+v", d)
		}
		s.assertNoRowsWritten(before)
	})

	t.Run("concurrent requests with one key create one order", func(t *testing.T) {
		before := s.rowCounts()
		const requests = 12
		answers := make([]response, requests)
		var wg sync.WaitGroup
		for i := range requests {
			wg.Go(func() { answers[i] = s.do("POST", "/orders", validOrder, "Idempotency-Key", "concurrent-1") })
		}
		wg.Wait()
		replays := 0
		for _, a := range answers {
			if a.status != http.StatusCreated || !bytes.Equal(a.body, answers[0].body) {
				t.Fatalf("answers differ: %d %s and %d %s", a.status, a.body, answers[0].status, answers[0].body)
			}
			if a.header.Get(api.ReplayedHeader) == "true" {
				replays++
			}
		}
		if replays != requests-1 {
			t.Errorf("%d replayed answers, want %d", replays, requests-1)
		}
		assertNewRows(t, before, s.rowCounts(), 1)
	})

	// A key holder that rolls back lets the waiting requests in; InnoDB may
	// pick one of them as a deadlock victim (two waiters upgrading their
	// locks on the freed key), which the service runs again.
	t.Run("concurrent requests with one key, some rolled back", func(t *testing.T) {
		rs := newService(t, api.Config{AllowRollbackHeader: true})
		before := rs.rowCounts()
		const requests = 12
		answers := make([]response, requests)
		var wg sync.WaitGroup
		for i := range requests {
			headers := []string{"Idempotency-Key", "concurrent-2"}
			if i%3 == 0 {
				headers = append(headers, api.RollbackHeader, "1")
			}
			wg.Go(func() { answers[i] = rs.do("POST", "/orders", validOrder, headers...) })
		}
		wg.Wait()
		var body []byte
		for i, a := range answers {
			if i%3 == 0 {
				// Rolled back on purpose, or replayed when it came after
				// the commit of another.
				if a.status == http.StatusCreated {
					continue
				}
				if d := a.errorDetail(t); a.status != http.StatusInternalServerError || d.Code != api.CodeDeliberateRollback {
					t.Errorf("rollback request: %d %s", a.status, a.body)
				}
				continue
			}
			if a.status != http.StatusCreated {
				t.Fatalf("request %d: %d %s, want 201", i, a.status, a.body)
			}
			if body == nil {
				body = a.body
			} else if !bytes.Equal(a.body, body) {
				t.Errorf("answers differ: %s and %s", a.body, body)
			}
		}
		assertNewRows(t, before, rs.rowCounts(), 1)
	})
}

// assertNewRows checks that exactly orders orders (one item, one event and
// one key each) were written between before and after.
func assertNewRows(t *testing.T, before, after map[string]int, orders int) {
	t.Helper()
	for table, want := range map[string]int{"orders": orders, "outbox_events": orders, "idempotency_keys": orders, "order_items": 2 * orders} {
		if got := after[table] - before[table]; got != want {
			t.Errorf("%s: %d new rows, want %d", table, got, want)
		}
	}
}
