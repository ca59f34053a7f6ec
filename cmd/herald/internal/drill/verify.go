package drill

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/testkit/verify"
)

// VerifyInput names what a drill checks: the three databases and the topic.
type VerifyInput struct {
	OrdersDB, InventoryDB, WarehouseDB *sql.DB
	Brokers                            []string
	// Kafka is how kcat connects (verify.ReadSecuredTopic).
	Kafka kafka.Security
	Topic string
	// Consumer is the inventory's inbox consumer name.
	Consumer string
	// RolledBackOrders are the ids the orders API answered
	// deliberate_rollback for.
	RolledBackOrders []int64
	// InitialStock is every SKU's stock before the drill.
	InitialStock int64
}

// Verification is the outcome of Verify: the topic against the outbox
// (verify.Check, read by kcat) and the databases against each other
// (verify.CheckPipeline).
type Verification struct {
	Topic    *verify.Report
	Pipeline *verify.PipelineReport
	// RolledBackOnTopic are records keyed by a rolled-back order id.
	RolledBackOnTopic []verify.Record
	// Unpublished and Quarantined count outbox rows not published.
	Unpublished, Quarantined int
	// WarehouseReplays is how many repeated calls the warehouse answered
	// from its idempotency store (absorbed, no effect).
	WarehouseReplays int64

	Orders    *verify.OrdersState
	Inventory *verify.InventoryState
}

// Verify reads everything a drill checks. It fails only when something
// cannot be read; what it finds wrong is in the Verification.
func Verify(ctx context.Context, in VerifyInput) (*Verification, error) {
	v := &Verification{}
	var err error
	if v.Orders, err = verify.LoadOrders(ctx, in.OrdersDB); err != nil {
		return nil, err
	}
	if v.Inventory, err = verify.LoadInventory(ctx, in.InventoryDB, in.Consumer); err != nil {
		return nil, err
	}
	effects, err := verify.LoadEffects(ctx, in.WarehouseDB)
	if err != nil {
		return nil, err
	}
	if err := in.WarehouseDB.QueryRowContext(ctx, "SELECT COALESCE(SUM(replays), 0) FROM warehouse_requests").Scan(&v.WarehouseReplays); err != nil {
		return nil, fmt.Errorf("read warehouse_requests: %w", err)
	}
	rows, err := verify.LoadOutbox(ctx, in.OrdersDB)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if !r.Published && !r.Discarded {
			v.Unpublished++
		}
		if r.Quarantined && !r.Discarded {
			v.Quarantined++
		}
	}
	records, err := verify.ReadSecuredTopic(ctx, in.Brokers, in.Kafka, in.Topic)
	if err != nil {
		return nil, err
	}
	v.Topic = verify.Check(verify.Input{Committed: verify.Events(rows, nil), Records: records})
	rolledBack := map[string]bool{}
	for _, id := range in.RolledBackOrders {
		rolledBack[strconv.FormatInt(id, 10)] = true
	}
	for _, rec := range records {
		if rec.HasKey && rolledBack[rec.Key] {
			v.RolledBackOnTopic = append(v.RolledBackOnTopic, rec)
		}
	}
	v.Pipeline = verify.CheckPipeline(verify.PipelineInput{
		Orders: v.Orders, RolledBackOrders: in.RolledBackOrders, Inventory: v.Inventory,
		Effects: effects, InitialStock: in.InitialStock,
	})
	return v, nil
}

// Lost counts committed events that never reached the topic or the
// consumer's inbox.
func (v *Verification) Lost() int {
	lost := map[string]bool{}
	for _, e := range v.Topic.Missing {
		lost[e.ID] = true
	}
	for _, e := range v.Orders.Events {
		if !v.Inventory.Consumed[e.ID] {
			lost[e.ID] = true
		}
	}
	return len(lost)
}

// Ghosts counts what exists without a committed cause: records of unknown
// or rolled-back events, rolled-back orders in the database, events
// without their order, downstream rows of unknown orders or events.
func (v *Verification) Ghosts() int {
	onTopic := map[verify.Position]bool{}
	for _, recs := range [][]verify.Record{v.Topic.Ghosts, v.Topic.Strangers, v.RolledBackOnTopic} {
		for _, r := range recs {
			onTopic[r.Position] = true
		}
	}
	return len(onTopic) + len(v.Pipeline.RolledBackPresent) + len(v.Pipeline.EventsWithoutOrder) + len(v.Pipeline.Strays)
}

// Failures lists every violated property, at most perKind examples each;
// empty means the drill's pipeline is correct. Duplicates are not
// failures: delivery is at least once.
func (v *Verification) Failures(perKind int) []string {
	var out []string
	if n := v.Lost(); n > 0 {
		out = append(out, fmt.Sprintf("LOST: %d committed events missing from the topic or never consumed", n))
	}
	if n := v.Ghosts(); n > 0 {
		out = append(out, fmt.Sprintf("GHOSTS: %d records or rows without a committed cause", n))
	}
	if n := len(v.Topic.OrderViolations); n > 0 {
		out = append(out, fmt.Sprintf("ORDER: %d aggregates whose events first reached the topic out of outbox order", n))
	}
	if n := v.Pipeline.Doubles(); n > 0 {
		out = append(out, fmt.Sprintf("DOUBLE EFFECTS: %d (reservations, releases or warehouse effects applied more than once)", n))
	}
	if v.Unpublished > 0 || v.Quarantined > 0 {
		out = append(out, fmt.Sprintf("BACKLOG: %d events unpublished (%d quarantined)", v.Unpublished, v.Quarantined))
	}
	if !v.Topic.OK() || !v.Pipeline.OK() || len(v.RolledBackOnTopic) > 0 {
		out = append(out, v.Problems(perKind)...)
	}
	return out
}

// Problems details what the checks found, at most perKind lines per kind.
func (v *Verification) Problems(perKind int) []string {
	var out []string
	for _, p := range v.Topic.Problems(perKind) {
		out = append(out, "topic: "+p)
	}
	if n := len(v.RolledBackOnTopic); n > 0 {
		out = append(out, fmt.Sprintf("topic: records of rolled-back orders: %d", n))
		for i := 0; i < n && i < perKind; i++ {
			r := v.RolledBackOnTopic[i]
			out = append(out, fmt.Sprintf("topic:   order %s, event %s at %s", r.Key, r.EventID(), r.Position))
		}
	}
	for _, p := range v.Pipeline.Problems(perKind) {
		out = append(out, "databases: "+p)
	}
	return out
}
