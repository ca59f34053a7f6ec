package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/herald-outbox/herald/store"
)

// foreignRow is one way a writer other than outbox.Writer gets a row
// wrong, inserted with plain SQL.
type foreignRow struct {
	name string
	// change makes the valid row bad.
	change func(r *RawRow)
	// refusedBy names the dialects whose schema refuses the row at insert.
	refusedBy []string
	// column and problem are what the row's store.RowDefect must say.
	column, problem string
	// noSuccessor: the aggregate gets no valid second event (a row at
	// aggregate_seq 0 has none that waits for it; a bad aggregate key is
	// every event's of that aggregate).
	noSuccessor bool
}

// foreignRows covers every column a foreign writer can get wrong.
var foreignRows = []foreignRow{
	{name: "header value not a string", change: func(r *RawRow) { r.Headers = []byte(`{"tenant":1}`) },
		column: "headers", problem: `"tenant" whose value is a JSON number`},
	{name: "headers not an object", change: func(r *RawRow) { r.Headers = []byte(`["tenant"]`) },
		column: "headers", problem: "not a JSON object of strings but a JSON array"},
	{name: "header value null", change: func(r *RawRow) { r.Headers = []byte(`{"tenant":null}`) },
		column: "headers", problem: "JSON null, not a string"},
	{name: "NUL in a header value", change: func(r *RawRow) { r.Headers = []byte(`{"tenant":"a\u0000"}`) },
		refusedBy: []string{"postgres"}, column: "headers", problem: "contains a NUL character"},
	{name: "NUL in a header name", change: func(r *RawRow) { r.Headers = []byte(`{"ten\u0000ant":"a"}`) },
		refusedBy: []string{"postgres"}, column: "headers", problem: "contains a NUL character"},
	{name: "empty header name", change: func(r *RawRow) { r.Headers = []byte(`{"":"a"}`) },
		column: "headers", problem: "is empty"},
	{name: "headers not JSON", change: func(r *RawRow) { r.Headers, r.ChecksOff = []byte(`{"tenant":`), true },
		refusedBy: []string{"postgres"}, column: "headers", problem: "is not valid JSON"},
	{name: "secret in bad headers", change: func(r *RawRow) {
		r.Headers = []byte(`{"db":"mysql://app:hunter2@db.internal/orders","n":1}`)
	}, column: "headers", problem: `"n" whose value is a JSON number`},
	{name: "payload not JSON", change: func(r *RawRow) { r.Payload, r.ChecksOff = []byte(`not json`), true },
		refusedBy: []string{"postgres"}, column: "payload", problem: "is not a valid JSON document"},
	{name: "payload not UTF-8", change: func(r *RawRow) { r.Payload = []byte("{\"a\":\"\x80\"}") },
		refusedBy: []string{"mysql", "postgres"}, column: "payload", problem: "is not valid UTF-8"},
	{name: "schema version 0", change: func(r *RawRow) { r.SchemaVersion = 0 },
		refusedBy: []string{"postgres"}, column: "schema_version", problem: "must be 1 to 65535"},
	{name: "schema version 65536", change: func(r *RawRow) { r.SchemaVersion = 65536 },
		refusedBy: []string{"mysql", "postgres"}, column: "schema_version", problem: "must be 1 to 65535"},
	{name: "aggregate seq 0", change: func(r *RawRow) { r.AggregateSeq = 0 }, noSuccessor: true,
		refusedBy: []string{"postgres"}, column: "aggregate_seq", problem: "must be 1 or more"},
	{name: "empty aggregate id", change: func(r *RawRow) { r.AggregateID = "" }, noSuccessor: true,
		column: "aggregate_id", problem: "is empty"},
	{name: "NUL in aggregate id", change: func(r *RawRow) { r.AggregateID += "\x00" }, noSuccessor: true,
		refusedBy: []string{"postgres"}, column: "aggregate_id", problem: "contains a NUL character"},
	{name: "blank aggregate type", change: func(r *RawRow) { r.AggregateType = "  " }, noSuccessor: true,
		column: "aggregate_type", problem: "is empty"},
	{name: "empty event type", change: func(r *RawRow) { r.EventType = "" },
		column: "event_type", problem: "is empty"},
	{name: "id not a UUID", change: func(r *RawRow) { r.ID = "not-a-uuid" },
		refusedBy: []string{"postgres"}, column: "id", problem: "is not a UUID"},
}

// testRowsForeignWritersGotWrong: rows inserted with plain SQL that herald
// cannot publish as they are (issue 21, defect 2). Each one the schema
// takes is claimed as an event whose Defect names its column, next to
// every other event of the batch (the claim does not fail); settled as the
// relay settles an encoding failure, it is quarantined with a scrubbed
// last_error, its successor is held behind it, and show and discard work
// on it, show with the stored value. The schema refuses the others.
func testRowsForeignWritersGotWrong(t *testing.T, h Harness) {
	dialect := h.Store.Dialect().Name()
	good := h.add(t, orderEvents("good-1", "good-2", "good-1", "good-3")...)
	h.DropTrigger(t) // the trigger refuses every row below: TestBadRowsAreRefused, migrations
	type inserted struct {
		foreignRow
		id, successor string
	}
	var bad []inserted
	for i, c := range foreignRows {
		row := RawRow{ID: uuid.Must(uuid.NewV7()).String(), AggregateType: "order", AggregateID: fmt.Sprintf("bad-%02d", i),
			AggregateSeq: 1, EventType: "order.created", SchemaVersion: 1, Payload: []byte(`{"n":1}`)}
		c.change(&row)
		err := h.InsertRaw(t, row)
		refused := false
		for _, d := range c.refusedBy {
			refused = refused || d == dialect
		}
		switch {
		case refused && err == nil:
			t.Errorf("%s: the schema took the row; the test expects %s to refuse it", c.name, dialect)
			continue
		case refused:
			t.Logf("%s: refused at insert: %v", c.name, err)
			continue
		case err != nil:
			t.Fatalf("%s: insert: %v", c.name, err)
		}
		in := inserted{foreignRow: c, id: row.ID}
		if !c.noSuccessor {
			next := RawRow{ID: uuid.Must(uuid.NewV7()).String(), AggregateType: row.AggregateType, AggregateID: row.AggregateID,
				AggregateSeq: row.AggregateSeq + 1, EventType: "order.updated", SchemaVersion: 1, Payload: []byte(`{"n":2}`)}
			if err := h.InsertRaw(t, next); err != nil {
				t.Fatalf("%s: insert the successor: %v", c.name, err)
			}
			in.successor = next.ID
		}
		bad = append(bad, in)
	}

	r := h.join(t, "relay-a", time.Minute)
	c := r.claim(t, 1000) // fails the test if the claim fails
	claimed := map[string]store.Event{}
	for _, e := range c.Events {
		claimed[e.ID] = e
	}
	for _, id := range good {
		if e, ok := claimed[id]; !ok || e.Defect != nil {
			t.Errorf("good event %s: claimed %v, defect %v; want it claimed as it is", id, ok, e.Defect)
		}
	}
	for _, b := range bad {
		e, ok := claimed[b.id]
		if !ok || e.Defect == nil || e.Defect.Column != b.column || !strings.Contains(e.Defect.Problem, b.problem) {
			t.Errorf("%s: claimed %v with defect %+v; want column %s, problem %q", b.name, ok, e.Defect, b.column, b.problem)
		}
		if s, ok := claimed[b.successor]; b.successor != "" && (!ok || s.Defect != nil) {
			t.Errorf("%s: successor claimed %v, defect %v; want it in the batch behind the bad row", b.name, ok, s.Defect)
		}
	}
	if t.Failed() {
		return
	}

	// Settle as the relay does (relay.outcome): a defect is an encoding
	// failure, fatal; the rest of its aggregate's chain is not sent.
	var out store.Outcome
	behind := map[store.AggregateKey]string{}
	for _, e := range c.Events {
		k := store.AggregateKey{AggregateType: e.AggregateType, AggregateID: e.AggregateID}
		switch {
		case e.Defect != nil:
			out.Failed = append(out.Failed, store.Failure{EventID: e.ID, Class: "encode", Message: "encode: " + e.Defect.Error(), Quarantine: true})
			behind[k] = e.ID
		case behind[k] != "":
			out.Unsent = append(out.Unsent, store.Unsent{EventID: e.ID, Behind: behind[k]})
		default:
			out.Published = append(out.Published, e.ID)
		}
	}
	if res := r.settle(t, c, out); res.Quarantined != len(bad) || res.Published != len(good) {
		t.Fatalf("settled %+v, want %d quarantined and %d published", res, len(bad), len(good))
	}
	if again := r.claim(t, 1000); len(again.Events) != 0 {
		t.Errorf("claimed %v after the settle; the bad rows' successors must wait behind them", ids(again.Events))
	}

	list, err := h.Store.ListQuarantined(ctx, store.QuarantineFilter{ErrorClass: "encode"})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]store.QuarantinedEvent{}
	for _, q := range list {
		listed[q.ID] = q
	}
	for _, b := range bad {
		q, ok := listed[b.id]
		if !ok || !strings.Contains(q.LastError, "column "+b.column) || strings.Contains(q.LastError, "hunter2") {
			t.Errorf("%s: listed %v, last_error %q; want it quarantined (encode), naming column %s, no secret", b.name, ok, q.LastError, b.column)
		}
		if want := map[bool]int{true: 0, false: 1}[b.successor == ""]; q.HeldBehind != want {
			t.Errorf("%s: %d event(s) held behind it, want %d", b.name, q.HeldBehind, want)
		}
		d, err := h.Store.ShowEvent(ctx, b.id)
		switch {
		case err != nil:
			t.Errorf("%s: show: %v", b.name, err)
			continue
		case d.State != store.StateQuarantined || d.Defect == nil || d.Defect.Column != b.column || b.column == "headers" && d.Defect.Stored == "":
			t.Errorf("%s: show says state %s, defect %+v; want quarantined, the defect of %s with its stored value", b.name, d.State, d.Defect, b.column)
		case strings.Contains(d.Defect.Stored, "hunter2") || strings.Contains(d.Defect.Stored+d.LastError, "app:hunter2"):
			t.Errorf("%s: show keeps a secret: %q", b.name, d.Defect.Stored)
		case len(d.Failures) != 1 || d.Failures[0].ErrorClass != "encode":
			t.Errorf("%s: failures %+v, want one encode failure", b.name, d.Failures)
		}
		if b.column == "id" && d.Defect != nil && d.Defect.Stored != "not-a-uuid" {
			t.Errorf("%s: stored %q, want the id as stored", b.name, d.Defect.Stored)
		}
		if ch, err := h.Store.Discard(ctx, b.id, "oncall", "written by hand", false); err != nil || !ch.Changed {
			t.Errorf("%s: discard: %+v, %v", b.name, ch, err)
		}
	}
	// Discarded, the bad rows let their successors go.
	var successors []string
	for _, b := range bad {
		if b.successor != "" {
			successors = append(successors, b.successor)
		}
	}
	after := r.claim(t, 1000)
	if got := ids(after.Events); len(got) != len(successors) {
		t.Errorf("after the discards claimed %v, want the successors %v", got, successors)
	}
	if _, err := h.Store.ShowEvent(ctx, "never-inserted"); !errors.Is(err, store.ErrEventNotFound) {
		t.Errorf("show of a missing event: %v", err)
	}
}
