package stock_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/testkit/testenv"
)

var twoOfSKU1 = contract.OrderItem{SKU: "SKU-1", Quantity: 2, UnitPrice: "9.99"}

// TestSameEventDeliveredFiveTimes re-produces one order.created five times:
// one reservation, one warehouse effect, four duplicate hits. Then the
// order.cancelled, delivered twice, releases the stock once and makes one
// more warehouse effect; on each database server.
func TestSameEventDeliveredFiveTimes(t *testing.T) {
	testenv.OnEachServer(t, testSameEventDeliveredFiveTimes)
}

func testSameEventDeliveredFiveTimes(t *testing.T, on testenv.Server) {
	f := newFixtureOn(t, on, 1)
	createdID, created := event(t, contract.TypeOrderCreated, 7, twoOfSKU1)
	f.produce(t, "7", created, created, created, created, created)
	svc := runService(t, f, stock.Config{})

	testenv.Eventually(t, time.Minute, "five deliveries handled and the warehouse called", func() bool {
		st := svc.Stats()
		return st.Processed+st.Duplicates == 5 && f.warehouseStats(t).Effects == 1 &&
			f.count(t, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'done'") == 1
	})
	if st := svc.Stats(); st.Processed != 1 || st.Duplicates != 4 {
		t.Errorf("processed %d, duplicates %d; want 1 and 4", st.Processed, st.Duplicates)
	}
	if n := f.count(t, "SELECT COUNT(*) FROM reservations WHERE order_id = 7 AND status = 'reserved'"); n != 1 {
		t.Errorf("%d reservations, want 1", n)
	}
	if n := f.count(t, "SELECT reserved FROM stock WHERE sku = 'SKU-1'"); n != 2 {
		t.Errorf("SKU-1 reserved %d, want 2", n)
	}
	var rec server.KeyRecord
	getJSON(t, f.warehouse.URL+"/v1/operations/"+createdID, &rec)
	if rec.Effects != 1 || rec.StatusCode != http.StatusCreated {
		t.Errorf("warehouse record of the event id: %+v", rec)
	}

	_, cancelled := event(t, contract.TypeOrderCancelled, 7, twoOfSKU1)
	f.produce(t, "7", cancelled, cancelled)
	testenv.Eventually(t, time.Minute, "the cancellation handled and the warehouse called", func() bool {
		st := svc.Stats()
		return st.Processed+st.Duplicates == 7 && f.warehouseStats(t).Effects == 2 &&
			f.count(t, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'done'") == 2
	})
	if st := svc.Stats(); st.Processed != 2 || st.Duplicates != 5 {
		t.Errorf("processed %d, duplicates %d; want 2 and 5", st.Processed, st.Duplicates)
	}
	if n := f.count(t, "SELECT reserved FROM stock WHERE sku = 'SKU-1'"); n != 0 {
		t.Errorf("SKU-1 reserved %d after the release, want 0", n)
	}
	if n := f.count(t, "SELECT available FROM stock WHERE sku = 'SKU-1'"); n != stock.DefaultStockDefault {
		t.Errorf("SKU-1 available %d after the release, want %d", n, stock.DefaultStockDefault)
	}
	if n := f.count(t, "SELECT COUNT(*) FROM reservations WHERE order_id = 7 AND status = 'released'"); n != 1 {
		t.Errorf("%d released reservations, want 1", n)
	}
	testenv.Eventually(t, 30*time.Second, "lag 0", func() bool { return f.lag(t) == 0 })
}

// TestShortStockRejectsOnce: with auto-provisioning off, an order for more
// than the stock holds is recorded as rejected, once, and nothing is
// reserved or called; the next order that fits is reserved.
func TestShortStockRejectsOnce(t *testing.T) {
	f := newFixture(t, 1)
	if err := stock.Seed(t.Context(), f.db.DB, f.db.Dialect, map[string]int64{"SKU-1": 3}); err != nil {
		t.Fatal(err)
	}
	_, tooBig := event(t, contract.TypeOrderCreated, 1, contract.OrderItem{SKU: "SKU-1", Quantity: 5, UnitPrice: "1.00"})
	_, unknown := event(t, contract.TypeOrderCreated, 2, contract.OrderItem{SKU: "SKU-404", Quantity: 1, UnitPrice: "1.00"})
	_, fits := event(t, contract.TypeOrderCreated, 3, contract.OrderItem{SKU: "SKU-1", Quantity: 3, UnitPrice: "1.00"})
	f.produce(t, "x", tooBig, tooBig, unknown, fits)
	svc := runService(t, f, stock.Config{DisableAutoProvision: true})
	testenv.Eventually(t, time.Minute, "four deliveries handled", func() bool {
		st := svc.Stats()
		return st.Processed+st.Duplicates == 4 && f.warehouseStats(t).Effects == 1
	})
	if n := f.count(t, "SELECT COUNT(*) FROM rejections WHERE order_id IN (1, 2)"); n != 2 {
		t.Errorf("%d rejections, want 2", n)
	}
	if n := f.count(t, "SELECT COUNT(*) FROM reservations"); n != 1 {
		t.Errorf("%d reservations, want 1 (order 3)", n)
	}
	if n := f.count(t, "SELECT available FROM stock WHERE sku = 'SKU-1'"); n != 0 {
		t.Errorf("SKU-1 available %d, want 0", n)
	}
	if n := f.count(t, "SELECT COUNT(*) FROM stock WHERE sku = 'SKU-404'"); n != 0 {
		t.Error("an unknown SKU was provisioned although auto-provisioning is off")
	}
}
