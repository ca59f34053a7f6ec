package verify

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The event types of the orders example, spelled out here rather than
// imported, like HeaderEventID.
const (
	EventOrderCreated   = "order.created"
	EventOrderCancelled = "order.cancelled"
	StatusCancelled     = "cancelled"
)

// OutboxEvent is an outbox row of the orders database with its type.
type OutboxEvent struct {
	Event
	Type      string
	Published bool
}

// Order is an order as the orders database holds it, with its outbox
// events in aggregate_seq order.
type Order struct {
	ID     int64
	Status string
	// Items is the ordered quantity per SKU.
	Items  map[string]int64
	Events []OutboxEvent
}

// eventsOf returns the order's events of type typ.
func (o Order) eventsOf(typ string) []OutboxEvent {
	var out []OutboxEvent
	for _, e := range o.Events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// OrdersState is the orders database: its orders, and outbox events whose
// aggregate is not an order the database holds.
type OrdersState struct {
	Orders       []Order
	OrphanEvents []OutboxEvent
	// Events are all outbox events.
	Events []OutboxEvent
}

// LoadOrders reads the orders example's database: orders, their items and
// every outbox event of aggregate type "order".
func LoadOrders(ctx context.Context, db *sql.DB) (*OrdersState, error) {
	st := &OrdersState{}
	byID := map[int64]*Order{}
	rows, err := db.QueryContext(ctx, "SELECT id, status FROM orders ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	var orders []Order
	for rows.Next() {
		o := Order{Items: map[string]int64{}}
		if err := rows.Scan(&o.ID, &o.Status); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read orders: %w", err)
		}
		orders = append(orders, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	st.Orders = orders
	for i := range st.Orders {
		byID[st.Orders[i].ID] = &st.Orders[i]
	}

	rows, err = db.QueryContext(ctx, "SELECT order_id, sku, quantity FROM order_items")
	if err != nil {
		return nil, fmt.Errorf("read order_items: %w", err)
	}
	for rows.Next() {
		var id, q int64
		var sku string
		if err := rows.Scan(&id, &sku, &q); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read order_items: %w", err)
		}
		if o := byID[id]; o != nil {
			o.Items[sku] += q
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read order_items: %w", err)
	}

	rows, err = db.QueryContext(ctx, `SELECT id, aggregate_type, aggregate_id, aggregate_seq, event_type, `+PublishedSQL+`
		FROM outbox_events ORDER BY aggregate_type, aggregate_id, aggregate_seq`)
	if err != nil {
		return nil, fmt.Errorf("read outbox_events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e OutboxEvent
		if err := rows.Scan(&e.ID, &e.AggregateType, &e.AggregateID, &e.Seq, &e.Type, &e.Published); err != nil {
			return nil, fmt.Errorf("read outbox_events: %w", err)
		}
		st.Events = append(st.Events, e)
		id, err := strconv.ParseInt(e.AggregateID, 10, 64)
		if o := byID[id]; err == nil && e.AggregateType == "order" && o != nil {
			o.Events = append(o.Events, e)
		} else {
			st.OrphanEvents = append(st.OrphanEvents, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox_events: %w", err)
	}
	return st, nil
}

// Reservation is a row of the inventory's reservations table.
type Reservation struct {
	ID              int64
	OrderID         int64
	SKU             string
	Quantity        int64
	Status          string
	ReservedEventID string
	ReleasedEventID string
}

// StockRow is a row of the inventory's stock table.
type StockRow struct {
	SKU                 string
	Available, Reserved int64
}

// Call is a row of the inventory's warehouse_calls table.
type Call struct {
	Key     string
	Action  string
	OrderID int64
	Status  string
}

// InventoryState is the inventory consumer's database.
type InventoryState struct {
	// Consumed are the event ids in consumed_events for the consumer.
	Consumed     map[string]bool
	Reservations []Reservation
	// Rejections maps rejected order ids to the reason.
	Rejections map[int64]string
	Stock      []StockRow
	Calls      []Call
}

// LoadInventory reads the inventory example's database; consumer is the
// inbox's consumer name.
func LoadInventory(ctx context.Context, db *sql.DB, consumer string) (*InventoryState, error) {
	st := &InventoryState{Consumed: map[string]bool{}, Rejections: map[int64]string{}}
	// The consumer is filtered here, not in SQL: placeholders differ
	// between MySQL and PostgreSQL, and every statement of this package is
	// written in SQL both speak.
	err := scanRows(ctx, db, "SELECT consumer_name, event_id FROM consumed_events", nil, func(r *sql.Rows) error {
		var name, id string
		err := r.Scan(&name, &id)
		if name == consumer {
			st.Consumed[id] = true
		}
		return err
	})
	if err == nil {
		err = scanRows(ctx, db, `SELECT id, order_id, sku, quantity, status, reserved_event_id, COALESCE(released_event_id, '')
			FROM reservations ORDER BY id`, nil, func(r *sql.Rows) error {
			var v Reservation
			err := r.Scan(&v.ID, &v.OrderID, &v.SKU, &v.Quantity, &v.Status, &v.ReservedEventID, &v.ReleasedEventID)
			st.Reservations = append(st.Reservations, v)
			return err
		})
	}
	if err == nil {
		err = scanRows(ctx, db, "SELECT order_id, reason FROM rejections", nil, func(r *sql.Rows) error {
			var id int64
			var reason string
			err := r.Scan(&id, &reason)
			st.Rejections[id] = reason
			return err
		})
	}
	if err == nil {
		err = scanRows(ctx, db, "SELECT sku, available, reserved FROM stock ORDER BY sku", nil, func(r *sql.Rows) error {
			var v StockRow
			err := r.Scan(&v.SKU, &v.Available, &v.Reserved)
			st.Stock = append(st.Stock, v)
			return err
		})
	}
	if err == nil {
		err = scanRows(ctx, db, "SELECT idempotency_key, action, order_id, status FROM warehouse_calls ORDER BY id", nil, func(r *sql.Rows) error {
			var v Call
			err := r.Scan(&v.Key, &v.Action, &v.OrderID, &v.Status)
			st.Calls = append(st.Calls, v)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	return st, nil
}

// Effect is a row of the warehouse's warehouse_effects table: an operation
// the external service applied.
type Effect struct {
	ID      int64
	Key     string
	Action  string
	OrderID int64
}

// LoadEffects reads the warehouse example's applied effects.
func LoadEffects(ctx context.Context, db *sql.DB) ([]Effect, error) {
	var out []Effect
	err := scanRows(ctx, db, "SELECT id, idempotency_key, action, order_id FROM warehouse_effects ORDER BY id", nil, func(r *sql.Rows) error {
		var e Effect
		err := r.Scan(&e.ID, &e.Key, &e.Action, &e.OrderID)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read warehouse_effects: %w", err)
	}
	return out, nil
}

func scanRows(ctx context.Context, db *sql.DB, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PipelineInput is what CheckPipeline compares: the three databases of the
// orders -> inventory -> warehouse pipeline.
type PipelineInput struct {
	Orders *OrdersState
	// RolledBackOrders are order ids the API said it rolled back.
	RolledBackOrders []int64
	Inventory        *InventoryState
	Effects          []Effect
	// InitialStock is every SKU's available quantity before any order.
	InitialStock int64
}

// PipelineReport is the outcome of CheckPipeline. Each list names one
// problem per line; empty lists mean the property holds.
type PipelineReport struct {
	Orders, Cancelled, Events int
	Reservations, Releases    int
	ReserveEffects            int
	ReleaseEffects            int

	// Atomicity: an order row without its event, an event without its
	// order row, a rolled-back order that left a row or an event.
	OrdersWithoutEvents []string
	EventsWithoutOrder  []string
	RolledBackPresent   []string
	// Lost downstream: events the inbox never recorded, orders without
	// their reservation, release or warehouse effect.
	NotConsumed         []string
	MissingReservations []string
	MissingReleases     []string
	MissingEffects      []string
	// Doubled: an order reserved or released more than once, or with more
	// than one warehouse effect per action.
	DoubleReservations []string
	DoubleReleases     []string
	DoubleEffects      []string
	// Strays: effects, reservations or inbox rows of events or orders the
	// orders database does not hold.
	Strays []string
	// WrongEvent: a reservation or effect attributed to another event than
	// the one that should have caused it.
	WrongEvent []string
	// Rejected orders (the drill gives ample stock: none is expected).
	Rejected []string
	// Calls still pending or failed.
	PendingCalls []string
	// StockMismatches: stock that does not add up to the orders.
	StockMismatches []string
}

// Doubles counts double reservations, releases and effects.
func (r *PipelineReport) Doubles() int {
	return len(r.DoubleReservations) + len(r.DoubleReleases) + len(r.DoubleEffects)
}

// OK reports whether every property holds.
func (r *PipelineReport) OK() bool { return len(r.Problems(0)) == 0 }

// Problems lists what is wrong, at most perKind lines per kind (0: only
// the headings).
func (r *PipelineReport) Problems(perKind int) []string {
	var out []string
	for _, k := range []struct {
		name  string
		lines []string
	}{
		{"orders without their events", r.OrdersWithoutEvents},
		{"events without their order", r.EventsWithoutOrder},
		{"rolled-back orders present", r.RolledBackPresent},
		{"events never consumed (no inbox row)", r.NotConsumed},
		{"orders not reserved", r.MissingReservations},
		{"cancelled orders not released", r.MissingReleases},
		{"missing warehouse effects", r.MissingEffects},
		{"double reservations", r.DoubleReservations},
		{"double releases", r.DoubleReleases},
		{"double warehouse effects", r.DoubleEffects},
		{"stray rows (no such order or event)", r.Strays},
		{"effects of the wrong event", r.WrongEvent},
		{"rejected orders", r.Rejected},
		{"warehouse calls pending or failed", r.PendingCalls},
		{"stock mismatches", r.StockMismatches},
	} {
		if len(k.lines) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %d", k.name, len(k.lines)))
		for i := 0; i < len(k.lines) && i < perKind; i++ {
			out = append(out, "  "+k.lines[i])
		}
		if perKind > 0 && len(k.lines) > perKind {
			out = append(out, fmt.Sprintf("  ... and %d more", len(k.lines)-perKind))
		}
	}
	return out
}

// CheckPipeline checks, from the databases alone, that every committed order
// had its effects exactly once downstream: its events consumed, its stock
// reserved once (and released once if cancelled), one warehouse effect per
// reservation and release, keyed by the event that caused it, and stock
// that adds up.
func CheckPipeline(in PipelineInput) *PipelineReport {
	r := &PipelineReport{Orders: len(in.Orders.Orders), Events: len(in.Orders.Events)}
	inv := in.Inventory
	orders := map[int64]Order{}
	for _, o := range in.Orders.Orders {
		orders[o.ID] = o
	}
	events := map[string]bool{}
	for _, e := range in.Orders.Events {
		events[e.ID] = true
		if !inv.Consumed[e.ID] {
			r.NotConsumed = append(r.NotConsumed, fmt.Sprintf("%s (%s %s/%s #%d)", e.ID, e.Type, e.AggregateType, e.AggregateID, e.Seq))
		}
	}
	for id := range inv.Consumed {
		if !events[id] {
			r.Strays = append(r.Strays, "inbox row for unknown event "+id)
		}
	}
	for _, e := range in.Orders.OrphanEvents {
		r.EventsWithoutOrder = append(r.EventsWithoutOrder, fmt.Sprintf("%s %s of %s/%s", e.ID, e.Type, e.AggregateType, e.AggregateID))
	}
	for _, id := range in.RolledBackOrders {
		if _, ok := orders[id]; ok {
			r.RolledBackPresent = append(r.RolledBackPresent, fmt.Sprintf("order %d: rolled back, yet in orders", id))
		}
		for _, e := range in.Orders.OrphanEvents {
			if e.AggregateType == "order" && e.AggregateID == strconv.FormatInt(id, 10) {
				r.RolledBackPresent = append(r.RolledBackPresent, fmt.Sprintf("order %d: rolled back, yet event %s in the outbox", id, e.ID))
			}
		}
	}

	resByOrder := map[int64][]Reservation{}
	for _, v := range inv.Reservations {
		resByOrder[v.OrderID] = append(resByOrder[v.OrderID], v)
		if _, ok := orders[v.OrderID]; !ok {
			r.Strays = append(r.Strays, fmt.Sprintf("reservation %d of unknown order %d", v.ID, v.OrderID))
		}
	}
	effByOrder := map[int64][]Effect{}
	for _, e := range in.Effects {
		effByOrder[e.OrderID] = append(effByOrder[e.OrderID], e)
		if _, ok := orders[e.OrderID]; !ok {
			r.Strays = append(r.Strays, fmt.Sprintf("warehouse effect %d (%s, key %s) of unknown order %d", e.ID, e.Action, e.Key, e.OrderID))
		}
	}
	for id := range inv.Rejections {
		if _, ok := orders[id]; !ok {
			r.Strays = append(r.Strays, fmt.Sprintf("rejection of unknown order %d", id))
		}
	}

	// expectedReserved is what stock.reserved must hold per SKU: the
	// quantities of orders not cancelled.
	expectedReserved := map[string]int64{}
	for _, o := range in.Orders.Orders {
		created, cancelled := o.eventsOf(EventOrderCreated), o.eventsOf(EventOrderCancelled)
		isCancelled := o.Status == StatusCancelled
		if isCancelled {
			r.Cancelled++
		}
		switch {
		case len(created) != 1:
			r.OrdersWithoutEvents = append(r.OrdersWithoutEvents, fmt.Sprintf("order %d: %d %s events, want 1", o.ID, len(created), EventOrderCreated))
		case isCancelled && len(cancelled) != 1:
			r.OrdersWithoutEvents = append(r.OrdersWithoutEvents, fmt.Sprintf("order %d: cancelled with %d %s events, want 1", o.ID, len(cancelled), EventOrderCancelled))
		case !isCancelled && len(cancelled) != 0:
			r.OrdersWithoutEvents = append(r.OrdersWithoutEvents, fmt.Sprintf("order %d: %s, yet %d %s events", o.ID, o.Status, len(cancelled), EventOrderCancelled))
		}
		if !isCancelled {
			for sku, q := range o.Items {
				expectedReserved[sku] += q
			}
		}
		var createdID, cancelledID string
		if len(created) > 0 {
			createdID = created[0].ID
		}
		if len(cancelled) > 0 {
			cancelledID = cancelled[0].ID
		}
		if reason, ok := inv.Rejections[o.ID]; ok {
			r.Rejected = append(r.Rejected, fmt.Sprintf("order %d: %s", o.ID, reason))
			continue
		}
		r.checkReservations(o, resByOrder[o.ID], createdID, cancelledID, isCancelled)
		r.checkEffects(o, effByOrder[o.ID], createdID, cancelledID, isCancelled)
	}

	for _, c := range inv.Calls {
		if c.Status != "done" {
			r.PendingCalls = append(r.PendingCalls, fmt.Sprintf("%s call of order %d (key %s): %s", c.Action, c.OrderID, c.Key, c.Status))
		}
	}
	skus := map[string]bool{}
	for _, s := range inv.Stock {
		skus[s.SKU] = true
		if want := expectedReserved[s.SKU]; s.Reserved != want {
			r.StockMismatches = append(r.StockMismatches, fmt.Sprintf("%s: reserved %d, the orders not cancelled hold %d", s.SKU, s.Reserved, want))
		}
		if s.Available+s.Reserved != in.InitialStock {
			r.StockMismatches = append(r.StockMismatches, fmt.Sprintf("%s: available %d + reserved %d != initial %d", s.SKU, s.Available, s.Reserved, in.InitialStock))
		}
	}
	for sku, q := range expectedReserved {
		if !skus[sku] && q != 0 {
			r.StockMismatches = append(r.StockMismatches, fmt.Sprintf("%s: no stock row, the orders hold %d", sku, q))
		}
	}
	for _, l := range [][]string{r.NotConsumed, r.StockMismatches, r.Strays} {
		slices.Sort(l)
	}
	return r
}

func (r *PipelineReport) checkReservations(o Order, rows []Reservation, createdID, cancelledID string, cancelled bool) {
	bySKU := map[string][]Reservation{}
	for _, v := range rows {
		bySKU[v.SKU] = append(bySKU[v.SKU], v)
	}
	if len(rows) == 0 {
		r.MissingReservations = append(r.MissingReservations, fmt.Sprintf("order %d: no reservation", o.ID))
		return
	}
	r.Reservations++
	skus := make([]string, 0, len(o.Items))
	for sku := range o.Items {
		skus = append(skus, sku)
	}
	slices.Sort(skus)
	released := 0
	for _, sku := range skus {
		want := o.Items[sku]
		vs := bySKU[sku]
		switch {
		case len(vs) == 0:
			r.MissingReservations = append(r.MissingReservations, fmt.Sprintf("order %d: %s not reserved", o.ID, sku))
			continue
		case len(vs) > 1:
			r.DoubleReservations = append(r.DoubleReservations, fmt.Sprintf("order %d: %s reserved %d times", o.ID, sku, len(vs)))
		case vs[0].Quantity > want:
			r.DoubleReservations = append(r.DoubleReservations, fmt.Sprintf("order %d: %s reserved %d, ordered %d", o.ID, sku, vs[0].Quantity, want))
		case vs[0].Quantity < want:
			r.MissingReservations = append(r.MissingReservations, fmt.Sprintf("order %d: %s reserved %d, ordered %d", o.ID, sku, vs[0].Quantity, want))
		}
		for _, v := range vs {
			if v.ReservedEventID != createdID {
				r.WrongEvent = append(r.WrongEvent, fmt.Sprintf("order %d: %s reserved by event %s, not its %s %s", o.ID, sku, v.ReservedEventID, EventOrderCreated, createdID))
			}
			switch {
			case cancelled && v.Status == "released" && v.ReleasedEventID != cancelledID:
				r.WrongEvent = append(r.WrongEvent, fmt.Sprintf("order %d: %s released by event %s, not its %s %s", o.ID, sku, v.ReleasedEventID, EventOrderCancelled, cancelledID))
			case cancelled && v.Status == "released":
				released++
			case cancelled:
				r.MissingReleases = append(r.MissingReleases, fmt.Sprintf("order %d: cancelled, %s still %s", o.ID, sku, v.Status))
			case v.Status != "reserved":
				r.DoubleReleases = append(r.DoubleReleases, fmt.Sprintf("order %d: not cancelled, yet %s %s", o.ID, sku, v.Status))
			}
		}
	}
	for sku, vs := range bySKU {
		if _, ok := o.Items[sku]; !ok {
			r.DoubleReservations = append(r.DoubleReservations, fmt.Sprintf("order %d: %s reserved (%d rows) but not ordered", o.ID, sku, len(vs)))
		}
	}
	if released > 0 {
		r.Releases++
	}
}

func (r *PipelineReport) checkEffects(o Order, effects []Effect, createdID, cancelledID string, cancelled bool) {
	byAction := map[string][]Effect{}
	for _, e := range effects {
		byAction[e.Action] = append(byAction[e.Action], e)
	}
	check := func(action, key string, want int) {
		es := byAction[action]
		switch {
		case len(es) < want:
			r.MissingEffects = append(r.MissingEffects, fmt.Sprintf("order %d: no %s effect", o.ID, action))
		case len(es) > want:
			keys := make([]string, len(es))
			for i, e := range es {
				keys[i] = e.Key
			}
			r.DoubleEffects = append(r.DoubleEffects, fmt.Sprintf("order %d: %d %s effects, want %d (keys %s)", o.ID, len(es), action, want, strings.Join(keys, ", ")))
		}
		for _, e := range es {
			if want > 0 && e.Key != key {
				r.WrongEvent = append(r.WrongEvent, fmt.Sprintf("order %d: %s effect %d keyed %s, not by its event %s", o.ID, action, e.ID, e.Key, key))
			}
		}
	}
	check("reserve", createdID, 1)
	r.ReserveEffects += len(byAction["reserve"])
	r.ReleaseEffects += len(byAction["release"])
	if cancelled {
		check("release", cancelledID, 1)
	} else {
		check("release", "", 0)
	}
	for action, es := range byAction {
		if action != "reserve" && action != "release" {
			r.Strays = append(r.Strays, fmt.Sprintf("order %d: %d %q effects", o.ID, len(es), action))
		}
	}
}
