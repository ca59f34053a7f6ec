package testenv

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/herald-outbox/herald/outbox"
	"github.com/herald-outbox/herald/store"
	"github.com/herald-outbox/herald/store/mysql"
)

// OrderEvents returns one order.created event per aggregate id, in order,
// each with the small payload {"n":i}.
func OrderEvents(aggregateIDs ...string) []outbox.Event {
	events := make([]outbox.Event, len(aggregateIDs))
	for i, id := range aggregateIDs {
		events[i] = outbox.Event{AggregateType: "order", AggregateID: id, EventType: "order.created",
			SchemaVersion: 1, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	return events
}

// AddEvents commits events in one transaction with the outbox writer and
// returns their ids; db is MariaDB (Database.AddEvents serves either
// server).
func AddEvents(t testing.TB, db *sql.DB, events ...outbox.Event) []string {
	t.Helper()
	return addEvents(t, db, mysql.Dialect{}, events...)
}

// AddEvents commits events to d in one transaction with the outbox writer
// and returns their ids.
func (d *Database) AddEvents(t testing.TB, events ...outbox.Event) []string {
	t.Helper()
	return addEvents(t, d.DB, d.Dialect, events...)
}

func addEvents(t testing.TB, db *sql.DB, dialect store.WriterDialect, events ...outbox.Event) []string {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Dialect: dialect})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ids, err := w.Add(ctx, tx, events...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// Strings returns the single string column a query selects.
func Strings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Claim makes relayID a member of st's relays (the only one, in these
// tests, so it owns every bucket once it has its turn) and claims up to
// limit events. lease is how long its buckets last without another turn.
func Claim(t testing.TB, st *store.Store, relayID string, lease time.Duration, limit int) store.Claim {
	t.Helper()
	ctx := context.Background()
	rb, err := st.Rebalance(ctx, store.RebalanceRequest{RelayID: relayID, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.Claim(ctx, store.ClaimRequest{Ownership: rb.Ownership, Limit: limit, Policy: store.OrderHold})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
