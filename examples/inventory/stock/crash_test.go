package stock_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/herald-outbox/herald/testkit/testenv"

	"github.com/herald-outbox/herald/examples/contract"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/internal/failpoint"
)

// TestCrashBetweenCommitAndCall kills the inventory process (SIGKILL, by
// failpoint) at each of the consumer's two crash windows, then restarts it
// without the failpoint and checks that the order is reserved once and the
// warehouse applied exactly one effect; on each database server.
func TestCrashBetweenCommitAndCall(t *testing.T) {
	testenv.OnEachServer(t, testCrashBetweenCommitAndCall)
}

func testCrashBetweenCommitAndCall(t *testing.T, on testenv.Server) {
	tests := []struct {
		failpoint string
		// offsetCommitted says whether the Kafka offset may have been
		// committed when the process died.
		offsetMayBeCommitted bool
		// wantRedelivery: after the restart, the record is delivered again
		// and dropped by the inbox.
		wantRedelivery bool
	}{
		{failpoint.ConsumerAfterCommitBeforeOffset, false, true},
		{failpoint.ConsumerAfterCommitBeforeCall, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.failpoint, func(t *testing.T) {
			f := newFixtureOn(t, on, 1)
			eventID, created := event(t, contract.TypeOrderCreated, 11, twoOfSKU1)
			f.produce(t, "11", created)

			first := startInventory(t, inventoryDrillMain, f, "HERALD_INVENTORY_ADDR=-", "HERALD_FAILPOINTS="+tt.failpoint+"=crash")
			first.Wait(t, 2*time.Minute)
			assertKilled(t, first)

			// The database transaction committed before the process died...
			if n := f.count(t, "SELECT COUNT(*) FROM consumed_events WHERE event_id = ?", eventID); n != 1 {
				t.Fatalf("consumed_events has %d rows for the event: the crash came before the commit", n)
			}
			if n := f.count(t, "SELECT reserved FROM stock WHERE sku = 'SKU-1'"); n != 2 {
				t.Fatalf("SKU-1 reserved %d at the crash, want 2", n)
			}
			// ...and before the warehouse call.
			if n := f.count(t, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'pending'"); n != 1 {
				t.Errorf("%d pending warehouse calls at the crash, want 1", n)
			}
			if n := f.warehouseStats(t).Effects; n != 0 {
				t.Errorf("the warehouse has %d effects at the crash: the call came before the failpoint", n)
			}
			// ...and, for the offset failpoint, before the offset commit.
			if lag := f.lag(t); !tt.offsetMayBeCommitted && lag != 1 {
				t.Errorf("lag %d at the crash, want 1: the offset was committed before the failpoint", lag)
			}

			addr := freeAddr(t)
			second := startInventory(t, inventoryMain, f, "HERALD_INVENTORY_ADDR="+addr)
			testenv.Eventually(t, time.Minute, "the warehouse called and the lag at 0", func() bool {
				return f.warehouseStats(t).Effects == 1 &&
					f.count(t, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'done'") == 1 &&
					f.lag(t) == 0
			})
			var st stock.Stats
			getJSON(t, "http://"+addr+"/stats", &st)
			if tt.wantRedelivery && (st.Duplicates != 1 || st.Processed != 0) {
				t.Errorf("after restart: processed %d, duplicates %d; want the redelivered record dropped (0, 1)", st.Processed, st.Duplicates)
			}
			if st.Processed != 0 {
				t.Errorf("after restart: processed %d, want 0", st.Processed)
			}
			if n := f.count(t, "SELECT COUNT(*) FROM reservations WHERE order_id = 11"); n != 1 {
				t.Errorf("%d reservations, want 1", n)
			}
			if n := f.count(t, "SELECT reserved FROM stock WHERE sku = 'SKU-1'"); n != 2 {
				t.Errorf("SKU-1 reserved %d, want 2", n)
			}
			if n := f.warehouseStats(t).Effects; n != 1 {
				t.Errorf("warehouse effects %d, want 1", n)
			}

			// SIGTERM drains and exits 0.
			if err := second.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if exit := second.Wait(t, time.Minute); exit.Code != 0 {
				t.Errorf("after SIGTERM: %v, want exit status 0", exit)
			}
		})
	}
}

func assertKilled(t *testing.T, p *testenv.Process) {
	t.Helper()
	if exit := p.Exit(); exit.Signal != syscall.SIGKILL {
		t.Fatalf("inventory exited with %v, want death by SIGKILL\n%s", exit, p.Log())
	}
}
