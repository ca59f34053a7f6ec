package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-outbox/herald/envelope"
	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/orders/api"
)

const validOrder = `{"customer_id":42,"items":[{"sku":"SKU-1","quantity":2,"unit_price":"9.99"},{"sku":"SKU-2","quantity":1,"unit_price":"0.5"}]}`

// TestCreateCommitsOrderAndEvent: a committed order and its order.created
// event both exist, and the event's payload is the order as written: equal
// to what the client sent (prices normalized to two decimals) and to what GET
// answers.
func TestCreateCommitsOrderAndEvent(t *testing.T) {
	s := newService(t, api.Config{})
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	resp := s.do("POST", "/orders", validOrder, "traceparent", traceparent)
	created := resp.created(t)
	if created.Status != api.StatusCreated || created.TotalAmount != "20.48" {
		t.Errorf("answer %+v, want status created and total 20.48", created)
	}
	if loc := resp.header.Get("Location"); loc != fmt.Sprint("/orders/", created.OrderID) {
		t.Errorf("Location %q", loc)
	}

	get := s.do("GET", fmt.Sprint("/orders/", created.OrderID), "")
	if get.status != http.StatusOK {
		t.Fatalf("GET: %d %s", get.status, get.body)
	}
	var order api.Order
	get.decode(t, &order)
	if order.Status != api.StatusCreated || order.CustomerID != 42 || order.TotalAmount != "20.48" ||
		order.CreatedAt.IsZero() || !order.UpdatedAt.Equal(order.CreatedAt) {
		t.Errorf("GET answered %+v", order)
	}

	events := s.events(created.OrderID)
	if len(events) != 1 {
		t.Fatalf("%d events for the order, want 1", len(events))
	}
	e := events[0]
	if e.aggregateType != api.AggregateType || e.aggregateID != strconv.FormatInt(created.OrderID, 10) ||
		e.eventType != api.EventOrderCreated || e.version != api.EventSchemaVersion || e.seq != 1 {
		t.Errorf("event %s: %s/%s #%d %s v%d", e.id, e.aggregateType, e.aggregateID, e.seq, e.eventType, e.version)
	}
	wantPayload := fmt.Sprintf(`{"order_id":%d,"customer_id":42,"items":[
		{"sku":"SKU-1","quantity":2,"unit_price":"9.99"},{"sku":"SKU-2","quantity":1,"unit_price":"0.50"}],
		"total_amount":"20.48"}`, created.OrderID)
	if got, want := jsonValue(t, e.payload), jsonValue(t, []byte(wantPayload)); !reflect.DeepEqual(got, want) {
		t.Errorf("payload %s\nwant    %s", e.payload, wantPayload)
	}
	fromGet := api.EventPayload{OrderID: order.OrderID, CustomerID: order.CustomerID, Items: order.Items, TotalAmount: order.TotalAmount}
	var payload api.EventPayload
	if err := json.Unmarshal(e.payload, &payload); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(payload, fromGet) {
		t.Errorf("payload %+v differs from GET's order %+v", payload, fromGet)
	}
	var headers map[string]string
	if err := json.Unmarshal(e.headers, &headers); err != nil || headers["traceparent"] != traceparent {
		t.Errorf("event headers %s (%v), want the request's traceparent", e.headers, err)
	}
}

// TestInjectedErrorRollsBackBoth: an error between the business insert and
// the event insert rolls back the order, its items and everything else of
// the transaction; the client gets a 500 that does not show the cause.
func TestInjectedErrorRollsBackBoth(t *testing.T) {
	injected := errors.New("injected failure: secret-detail")
	var hits int
	s := newService(t, api.WithAfterBusinessInsert(api.Config{}, func(context.Context) error {
		hits++
		return injected
	}))
	before := s.rowCounts()
	resp := s.do("POST", "/orders", validOrder, "Idempotency-Key", "k-injected")
	if resp.status != http.StatusInternalServerError {
		t.Fatalf("%d %s, want 500", resp.status, resp.body)
	}
	if d := resp.errorDetail(t); d.Code != api.CodeInternal || d.Message != "internal error" {
		t.Errorf("error %+v: want code internal and no details", d)
	}
	if hits != 1 {
		t.Fatalf("the hook ran %d times, want 1", hits)
	}
	s.assertNoRowsWritten(before)
}

// TestDeliberateRollback: with Config.AllowRollbackHeader, X-Herald-Rollback
// writes the order and its event, rolls both back and names the would-be
// order; without it the header is ignored.
func TestDeliberateRollback(t *testing.T) {
	t.Run("enabled", func(t *testing.T) {
		s := newService(t, api.Config{AllowRollbackHeader: true})
		before := s.rowCounts()
		resp := s.do("POST", "/orders", validOrder, api.RollbackHeader, "1", "Idempotency-Key", "k-rollback")
		if resp.status != http.StatusInternalServerError {
			t.Fatalf("%d %s, want 500", resp.status, resp.body)
		}
		d := resp.errorDetail(t)
		if d.Code != api.CodeDeliberateRollback || d.OrderID <= 0 {
			t.Fatalf("error %+v: want deliberate_rollback with an order_id", d)
		}
		s.assertNoRowsWritten(before)
		if s.orderExists(d.OrderID) || len(s.events(d.OrderID)) != 0 {
			t.Errorf("order %d or its event exists after the rollback", d.OrderID)
		}
		// The key was rolled back with the order: the same request without
		// the header creates the order now.
		created := s.do("POST", "/orders", validOrder, "Idempotency-Key", "k-rollback").created(t)
		if created.OrderID == d.OrderID {
			t.Errorf("the rolled-back order id %d was handed out again", d.OrderID)
		}
		if !s.orderExists(created.OrderID) || len(s.events(created.OrderID)) != 1 {
			t.Errorf("order %d: want its row and one event", created.OrderID)
		}
	})
	t.Run("disabled: header ignored", func(t *testing.T) {
		s := newService(t, api.Config{})
		created := s.do("POST", "/orders", validOrder, api.RollbackHeader, "1").created(t)
		if !s.orderExists(created.OrderID) || len(s.events(created.OrderID)) != 1 {
			t.Errorf("order %d: want its row and one event", created.OrderID)
		}
	})
}

// TestCancel: a cancel sets the status and writes order.cancelled (the whole
// order, after order.created) in one transaction; cancelling again answers
// 409 and writes nothing.
func TestCancel(t *testing.T) {
	s := newService(t, api.Config{})
	created := s.do("POST", "/orders", validOrder).created(t)
	path := fmt.Sprintf("/orders/%d/cancel", created.OrderID)

	resp := s.do("POST", path, "")
	if resp.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.status, resp.body)
	}
	var cancelled api.OrderResponse
	resp.decode(t, &cancelled)
	if cancelled != (api.OrderResponse{OrderID: created.OrderID, Status: api.StatusCancelled, TotalAmount: "20.48"}) {
		t.Errorf("cancel answered %+v", cancelled)
	}
	var order api.Order
	get := s.do("GET", fmt.Sprint("/orders/", created.OrderID), "")
	get.decode(t, &order)
	if order.Status != api.StatusCancelled || !order.UpdatedAt.After(order.CreatedAt) {
		t.Errorf("after cancel GET answered %+v", order)
	}

	events := s.events(created.OrderID)
	if len(events) != 2 || events[0].eventType != api.EventOrderCreated || events[1].eventType != api.EventOrderCancelled ||
		events[1].seq != 2 {
		t.Fatalf("events %+v, want order.created then order.cancelled", events)
	}
	var payload api.EventPayload
	if err := json.Unmarshal(events[1].payload, &payload); err != nil {
		t.Fatal(err)
	}
	want := api.EventPayload{OrderID: order.OrderID, CustomerID: order.CustomerID, Items: order.Items, TotalAmount: order.TotalAmount}
	if !reflect.DeepEqual(payload, want) {
		t.Errorf("order.cancelled payload %+v, want the whole order %+v", payload, want)
	}

	before := s.rowCounts()
	again := s.do("POST", path, "")
	if again.status != http.StatusConflict || again.errorDetail(t).Code != api.CodeAlreadyCancelled {
		t.Errorf("second cancel: %d %s, want 409 already_cancelled", again.status, again.body)
	}
	s.assertNoRowsWritten(before)
	if n := len(s.events(created.OrderID)); n != 2 {
		t.Errorf("%d events after the second cancel, want 2", n)
	}

	if r := s.do("POST", "/orders/999999/cancel", ""); r.status != http.StatusNotFound {
		t.Errorf("cancel of an unknown order: %d %s, want 404", r.status, r.body)
	}
	s.assertNoRowsWritten(before)
}

// TestRoutes: unknown paths and ids answer 404, wrong methods 405 with
// Allow, all as JSON errors; /healthz answers 200.
func TestRoutes(t *testing.T) {
	s := newService(t, api.Config{})
	for _, tt := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nope", http.StatusNotFound, api.CodeNotFound},
		{"GET", "/orders/123456", http.StatusNotFound, api.CodeNotFound},
		{"GET", "/orders/abc", http.StatusNotFound, api.CodeNotFound},
		{"GET", "/orders/-1", http.StatusNotFound, api.CodeNotFound},
		{"GET", "/orders/99999999999999999999", http.StatusNotFound, api.CodeNotFound},
		{"POST", "/orders/abc/cancel", http.StatusNotFound, api.CodeNotFound},
		{"GET", "/orders", http.StatusMethodNotAllowed, api.CodeMethodNotAllowed},
		{"DELETE", "/orders/1", http.StatusMethodNotAllowed, api.CodeMethodNotAllowed},
		{"GET", "/orders/1/cancel", http.StatusMethodNotAllowed, api.CodeMethodNotAllowed},
		{"POST", "/healthz", http.StatusMethodNotAllowed, api.CodeMethodNotAllowed},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := s.do(tt.method, tt.path, "")
			if resp.status != tt.status || resp.errorDetail(t).Code != tt.code {
				t.Errorf("%d %s, want %d %s", resp.status, resp.body, tt.status, tt.code)
			}
			if tt.status == http.StatusMethodNotAllowed && resp.header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	if resp := s.do("GET", "/healthz", ""); resp.status != http.StatusOK {
		t.Errorf("healthz: %d %s", resp.status, resp.body)
	}
}

// TestMultiByteSKUKeepsTheContract: the orders API and its consumers agree
// on what a SKU is. An order whose SKU is 64 emoji (256 bytes) is accepted
// and its event decodes with the consumers' registry (inventory reserves
// its stock instead of dead-lettering it); 65 emoji is refused with
// nothing written.
func TestMultiByteSKUKeepsTheContract(t *testing.T) {
	s := newService(t, api.Config{})
	order := func(sku string) string {
		return `{"customer_id":42,"items":[{"sku":"` + sku + `","quantity":1,"unit_price":"9.99"}]}`
	}
	sku := strings.Repeat("📦", api.SKUMaxLen)
	created := s.do("POST", "/orders", order(sku)).created(t)
	events := s.events(created.OrderID)
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	b, err := envelope.Encode(envelope.Envelope{EventID: events[0].id, Type: events[0].eventType,
		Version: uint16(events[0].version), Data: events[0].payload})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := contract.NewRegistry().Decode(b)
	if err != nil {
		t.Fatalf("the consumers refuse the event the API wrote: %v", err)
	}
	if p, _ := envelope.PayloadAs[contract.OrderCreatedV1](ev); len(p.Items) != 1 || p.Items[0].SKU != sku {
		t.Errorf("consumers read %+v", p)
	}

	before := s.rowCounts()
	resp := s.do("POST", "/orders", order(sku+"📦"))
	if d := resp.errorDetail(t); resp.status != http.StatusBadRequest || d.Field != "items[0].sku" {
		t.Errorf("65-emoji SKU: %d %+v, want 400 on items[0].sku", resp.status, d)
	}
	s.assertNoRowsWritten(before)
}
