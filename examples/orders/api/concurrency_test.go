package api_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/testkit/testenv"
)

// TestConcurrentCreateAndCancel: 16 clients create orders (some rolled back
// on purpose) and cancel their own and each other's through the HTTP
// handler, racing on the same orders. Afterwards every committed order has
// exactly its events (order.created, then order.cancelled iff it is
// cancelled, in aggregate_seq order), every cancel but one per order was
// refused, event ids are unique, and rolled-back orders left nothing; on
// each database server.
func TestConcurrentCreateAndCancel(t *testing.T) {
	testenv.OnEachServer(t, testConcurrentCreateAndCancel)
}

func testConcurrentCreateAndCancel(t *testing.T, server testenv.Server) {
	s := newServiceOn(t, server, api.Config{AllowRollbackHeader: true})
	const clients, perClient = 16, 12

	var (
		mu         sync.Mutex
		created    []int64
		rolledBack []int64
		cancels    = map[int64]int{} // order id -> successful cancels
		wg         sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for i := range perClient {
				body := fmt.Sprintf(`{"customer_id":%d,"items":[{"sku":"SKU-%d","quantity":%d,"unit_price":"%d.%02d"}]}`,
					c+1, i, 1+rng.IntN(5), rng.IntN(100), rng.IntN(100))
				var headers []string
				if i%5 == 4 {
					headers = []string{api.RollbackHeader, "1"}
				}
				resp := s.do("POST", "/orders", body, headers...)
				if len(headers) > 0 {
					d := resp.errorDetail(t)
					if resp.status != http.StatusInternalServerError || d.Code != api.CodeDeliberateRollback {
						t.Errorf("rollback: %d %s", resp.status, resp.body)
						return
					}
					mu.Lock()
					rolledBack = append(rolledBack, d.OrderID)
					mu.Unlock()
					continue
				}
				o := resp.created(t)
				mu.Lock()
				created = append(created, o.OrderID)
				// Cancel this order or a random earlier one, maybe one
				// another client is cancelling right now.
				target := o.OrderID
				if rng.IntN(2) == 0 {
					target = created[rng.IntN(len(created))]
				}
				mu.Unlock()
				if rng.IntN(3) == 0 {
					continue
				}
				cancel := s.do("POST", fmt.Sprintf("/orders/%d/cancel", target), "")
				switch cancel.status {
				case http.StatusOK:
					mu.Lock()
					cancels[target]++
					mu.Unlock()
				case http.StatusConflict:
				default:
					t.Errorf("cancel %d: %d %s", target, cancel.status, cancel.body)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	statuses := map[int64]string{}
	rows, err := s.db.DB.Query("SELECT id, status FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var status string
		if err := rows.Scan(&id, &status); err != nil {
			t.Fatal(err)
		}
		statuses[id] = status
	}
	rows.Close()
	if len(statuses) != len(created) {
		t.Fatalf("%d orders in the table, %d created", len(statuses), len(created))
	}

	cancelled := 0
	for _, id := range created {
		status, ok := statuses[id]
		if !ok {
			t.Errorf("order %d was answered 201 but is not in the table", id)
			continue
		}
		want := []string{api.EventOrderCreated}
		if status == api.StatusCancelled {
			want = append(want, api.EventOrderCancelled)
			cancelled++
		}
		if (status == api.StatusCancelled) != (cancels[id] == 1) || cancels[id] > 1 {
			t.Errorf("order %d: status %s after %d successful cancels", id, status, cancels[id])
		}
		events := s.events(id)
		if len(events) != len(want) {
			t.Errorf("order %d (%s): %d events, want %v", id, status, len(events), want)
			continue
		}
		for i, e := range events {
			if e.eventType != want[i] || e.seq != uint64(i+1) {
				t.Errorf("order %d: event #%d is %s (seq %d), want %s (seq %d)", id, i, e.eventType, e.seq, want[i], i+1)
			}
		}
	}
	for _, id := range rolledBack {
		if _, ok := statuses[id]; ok || len(s.events(id)) != 0 {
			t.Errorf("rolled-back order %d left rows behind", id)
		}
	}

	var total, distinct int
	if err := s.db.DB.QueryRow("SELECT COUNT(*), COUNT(DISTINCT id) FROM outbox_events").Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	if total != distinct || total != len(created)+cancelled {
		t.Errorf("%d events (%d distinct ids), want %d unique", total, distinct, len(created)+cancelled)
	}
	if cancelled == 0 || cancelled == len(created) || len(rolledBack) == 0 {
		t.Errorf("%d of %d orders cancelled, %d rolled back: the test should mix all three", cancelled, len(created), len(rolledBack))
	}
	t.Logf("%d orders, %d cancelled, %d rolled back, %d events", len(created), cancelled, len(rolledBack), total)
}
