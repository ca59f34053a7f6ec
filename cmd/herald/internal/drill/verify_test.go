package drill_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/herald-outbox/herald/cmd/herald/internal/drill"
	"github.com/herald-outbox/herald/examples/inventory/stock"
	"github.com/herald-outbox/herald/examples/orders/api"
	"github.com/herald-outbox/herald/examples/warehouse/server"
	"github.com/herald-outbox/herald/migrations"
	"github.com/herald-outbox/herald/testkit/testenv"
	"github.com/herald-outbox/herald/testkit/verify"
)

// craftedOrder is an order of a crafted world.
type craftedOrder struct {
	id        int64
	items     map[string]int64
	cancelled bool
	created   string // event ids
	cancel    string
}

// world is what a drill would leave behind after a clean run: three
// orders (order 2 cancelled), order 4 rolled back, every event on the topic
// once and in order, consumed once, reserved once, one warehouse effect per
// reservation and release. Cases break one thing each.
type world struct {
	orders     []*craftedOrder
	rolledBack []int64
	// topic lists the event ids produced, in order.
	topic []string
	// extra is SQL run after the world was written, per database.
	ordersSQL, inventorySQL, warehouseSQL []string
}

func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func cleanWorld() *world {
	w := &world{rolledBack: []int64{4}}
	for _, o := range []*craftedOrder{
		{id: 1, items: map[string]int64{"SKU-1": 2, "SKU-2": 1}},
		{id: 2, items: map[string]int64{"SKU-1": 1}, cancelled: true},
		{id: 3, items: map[string]int64{"SKU-3": 4}},
	} {
		o.created = uuid()
		w.topic = append(w.topic, o.created)
		if o.cancelled {
			o.cancel = uuid()
			w.topic = append(w.topic, o.cancel)
		}
		w.orders = append(w.orders, o)
	}
	return w
}

func (w *world) order(id int64) *craftedOrder {
	for _, o := range w.orders {
		if o.id == id {
			return o
		}
	}
	panic(id)
}

// materialize writes w into three fresh databases with the examples' real
// schemas and a fresh topic, and runs drill.Verify on them.
func materialize(t *testing.T, w *world) *drill.Verification {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ordersDB, invDB, wareDB := testenv.NewDatabase(t), testenv.NewDatabase(t), testenv.NewDatabase(t)
	if err := api.Migrate(ctx, ordersDB.DB); err != nil {
		t.Fatal(err)
	}
	for _, set := range []migrations.Set{migrations.Herald, stock.Migrations} {
		if _, err := set.Up(ctx, invDB.DB); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := server.Migrations.Up(ctx, wareDB.DB); err != nil {
		t.Fatal(err)
	}
	exec := func(db *testenv.Database, query string, args ...any) {
		t.Helper()
		if _, err := db.DB.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}

	reserved := map[string]int64{"SKU-1": 0, "SKU-2": 0, "SKU-3": 0}
	for _, o := range w.orders {
		status := "created"
		if o.cancelled {
			status = "cancelled"
		}
		exec(ordersDB, "INSERT INTO orders (id, customer_id, status, total_amount, created_at, updated_at) VALUES (?, 42, ?, 10, NOW(6), NOW(6))", o.id, status)
		line := 0
		events := []struct{ id, typ string }{{o.created, "order.created"}}
		if o.cancelled {
			events = append(events, struct{ id, typ string }{o.cancel, "order.cancelled"})
		}
		for seq, e := range events {
			exec(ordersDB, `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, aggregate_seq, event_type, schema_version,
				payload, occurred_at, published_at, attempts, next_attempt_at) VALUES (?, 'order', ?, ?, ?, 1, '{}', NOW(6), NOW(6), 1, NOW(6))`,
				e.id, strconv.FormatInt(o.id, 10), seq+1, e.typ)
			exec(invDB, "INSERT INTO consumed_events (consumer_name, event_id, consumed_at) VALUES (?, ?, NOW(6))", drill.ConsumerName, e.id)
		}
		for sku, q := range o.items {
			line++
			exec(ordersDB, "INSERT INTO order_items (order_id, line_no, sku, quantity, unit_price) VALUES (?, ?, ?, ?, '1.00')", o.id, line, sku, q)
			resStatus, releasedBy := "reserved", any(nil)
			if o.cancelled {
				resStatus, releasedBy = "released", o.cancel
			} else {
				reserved[sku] += q
			}
			exec(invDB, `INSERT INTO reservations (order_id, sku, quantity, status, reserved_event_id, released_event_id, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, NOW(6), NOW(6))`, o.id, sku, q, resStatus, o.created, releasedBy)
		}
		calls := []struct{ key, action string }{{o.created, "reserve"}}
		if o.cancelled {
			calls = append(calls, struct{ key, action string }{o.cancel, "release"})
		}
		for _, c := range calls {
			exec(invDB, `INSERT INTO warehouse_calls (idempotency_key, action, order_id, body, status, attempts, next_attempt_at, created_at, done_at)
				VALUES (?, ?, ?, '{}', 'done', 1, NOW(6), NOW(6), NOW(6))`, c.key, c.action, o.id)
			exec(wareDB, "INSERT INTO warehouse_effects (idempotency_key, action, order_id, items, created_at) VALUES (?, ?, ?, '[]', NOW(6))", c.key, c.action, o.id)
		}
	}
	for sku, q := range reserved {
		exec(invDB, "INSERT INTO stock (sku, available, reserved, updated_at) VALUES (?, ?, ?, NOW(6))", sku, drill.InitialStock-q, q)
	}
	for _, q := range w.ordersSQL {
		exec(ordersDB, q)
	}
	for _, q := range w.inventorySQL {
		exec(invDB, q)
	}
	for _, q := range w.warehouseSQL {
		exec(wareDB, q)
	}

	// The topic: each event keyed by its order id, in w.topic's order.
	brokers := testenv.KafkaBrokers(t)
	topic := testenv.NewTopic(t, brokers, testenv.TopicOptions{Partitions: 3})
	keys := map[string]string{}
	for _, o := range w.orders {
		keys[o.created], keys[o.cancel] = strconv.FormatInt(o.id, 10), strconv.FormatInt(o.id, 10)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, id := range w.topic {
		key, ok := keys[id]
		if !ok {
			key = id[:strings.IndexByte(id, ':')] // "order:event" for an event of no crafted order
			id = id[strings.IndexByte(id, ':')+1:]
		}
		rec := &kgo.Record{Key: []byte(key), Value: fmt.Appendf(nil, `{"event_id":%q}`, id),
			Headers: []kgo.RecordHeader{{Key: verify.HeaderEventID, Value: []byte(id)}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	v, err := drill.Verify(ctx, drill.VerifyInput{
		OrdersDB: ordersDB.DB, InventoryDB: invDB.DB, WarehouseDB: wareDB.DB, Brokers: brokers, Topic: topic,
		Consumer: drill.ConsumerName, RolledBackOrders: w.rolledBack, InitialStock: drill.InitialStock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerifyFindsCraftedFailures: the drill's verifier passes a clean
// world and fails each crafted fault — a checker that cannot fail proves
// nothing.
func TestVerifyFindsCraftedFailures(t *testing.T) {
	tests := []struct {
		name string
		// breakIt changes the clean world.
		breakIt func(w *world)
		// want are substrings of the failures (none: the world is clean).
		want  []string
		check func(t *testing.T, v *drill.Verification)
	}{
		{
			name:    "clean",
			breakIt: func(*world) {},
			check: func(t *testing.T, v *drill.Verification) {
				if v.Topic.Records != 4 || v.Pipeline.Reservations != 3 || v.Pipeline.Releases != 1 {
					t.Errorf("records %d, reservations %d, releases %d; want 4, 3, 1", v.Topic.Records, v.Pipeline.Reservations, v.Pipeline.Releases)
				}
			},
		},
		{
			name: "duplicates are counted, not failures",
			breakIt: func(w *world) {
				w.topic = append(w.topic, w.order(1).created, w.order(3).created)
			},
			check: func(t *testing.T, v *drill.Verification) {
				if v.Topic.Duplicates != 2 {
					t.Errorf("duplicates %d, want 2", v.Topic.Duplicates)
				}
			},
		},
		{
			name: "lost event: committed, never on the topic nor consumed",
			breakIt: func(w *world) {
				lost := w.order(3).created
				w.topic = w.topic[:len(w.topic)-1] // order 3's created is last
				w.inventorySQL = append(w.inventorySQL,
					"DELETE FROM consumed_events WHERE event_id = '"+lost+"'",
					"DELETE FROM reservations WHERE order_id = 3",
					"DELETE FROM warehouse_calls WHERE order_id = 3",
					"UPDATE stock SET available = available + 4, reserved = reserved - 4 WHERE sku = 'SKU-3'")
				w.warehouseSQL = append(w.warehouseSQL, "DELETE FROM warehouse_effects WHERE order_id = 3")
			},
			want: []string{"LOST: 1 ", "missing (committed, not on the topic): 1", "orders not reserved: 1", "missing warehouse effects: 1"},
			check: func(t *testing.T, v *drill.Verification) {
				if v.Lost() != 1 {
					t.Errorf("lost %d, want 1", v.Lost())
				}
			},
		},
		{
			name: "double reservation (behind a consumer without its guards)",
			breakIt: func(w *world) {
				o := w.order(1)
				w.inventorySQL = append(w.inventorySQL,
					"ALTER TABLE reservations DROP INDEX uq_reservation_order_sku",
					"INSERT INTO reservations (order_id, sku, quantity, status, reserved_event_id, created_at, updated_at) VALUES (1, 'SKU-1', 2, 'reserved', '"+o.created+"', NOW(6), NOW(6))",
					"UPDATE stock SET available = available - 2, reserved = reserved + 2 WHERE sku = 'SKU-1'")
			},
			want: []string{"DOUBLE EFFECTS: 1 ", "order 1: SKU-1 reserved 2 times", "SKU-1: reserved 4, the orders not cancelled hold 2"},
		},
		{
			name: "double warehouse effect (a second key for one reservation)",
			breakIt: func(w *world) {
				w.warehouseSQL = append(w.warehouseSQL,
					"INSERT INTO warehouse_effects (idempotency_key, action, order_id, items, created_at) VALUES ('retry-with-a-new-key', 'reserve', 1, '[]', NOW(6))")
			},
			want: []string{"DOUBLE EFFECTS: 1 ", "order 1: 2 reserve effects, want 1"},
		},
		{
			name: "double release",
			breakIt: func(w *world) {
				w.warehouseSQL = append(w.warehouseSQL,
					"INSERT INTO warehouse_effects (idempotency_key, action, order_id, items, created_at) VALUES ('again', 'release', 2, '[]', NOW(6))")
				w.inventorySQL = append(w.inventorySQL, "UPDATE stock SET available = available + 1, reserved = reserved - 1 WHERE sku = 'SKU-1'")
			},
			want: []string{"DOUBLE EFFECTS: 1 ", "order 2: 2 release effects", "SKU-1: reserved 1, the orders not cancelled hold 2"},
		},
		{
			name: "out-of-order pair: the cancel first reached the topic before the create",
			breakIt: func(w *world) {
				o := w.order(2)
				for i, id := range w.topic {
					switch id {
					case o.created:
						w.topic[i] = o.cancel
					case o.cancel:
						w.topic[i] = o.created
					}
				}
			},
			want: []string{"ORDER: 1 ", "aggregate order/2: #1"},
		},
		{
			name: "ghost: a rolled-back order's event on the topic",
			breakIt: func(w *world) {
				w.topic = append(w.topic, "4:"+uuid())
			},
			want: []string{"GHOSTS: 1 ", "records of rolled-back orders: 1"},
		},
		{
			name: "ghost: a rolled-back order's row committed after all",
			breakIt: func(w *world) {
				w.ordersSQL = append(w.ordersSQL, "INSERT INTO orders (id, customer_id, status, total_amount, created_at, updated_at) VALUES (4, 42, 'created', 10, NOW(6), NOW(6))")
			},
			want: []string{"GHOSTS: 1 ", "order 4: rolled back, yet in orders", "orders without their events: 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := cleanWorld()
			tt.breakIt(w)
			v := materialize(t, w)
			failures := v.Failures(10)
			text := strings.Join(failures, "\n")
			if len(tt.want) == 0 && len(failures) > 0 {
				t.Fatalf("a clean world fails:\n%s", text)
			}
			if len(tt.want) > 0 && len(failures) == 0 {
				t.Fatalf("the verifier found nothing wrong")
			}
			for _, want := range tt.want {
				if !strings.Contains(text, want) {
					t.Errorf("failures do not mention %q:\n%s", want, text)
				}
			}
			if tt.check != nil {
				tt.check(t, v)
			}
		})
	}
}
