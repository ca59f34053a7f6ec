package drill

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/herald-outbox/herald/internal/failpoint"
	"github.com/herald-outbox/herald/testkit/verify"
)

// A failpoint drill passes when nothing was lost or doubled, and only if
// its process died in the window the drill is about: a crash that held no
// batch, or an order that never committed, proves nothing. Each failpoint
// drill of the Catalog names its evidence function for that second part.

// evidence reads what a drill's target left behind when it died at its
// failpoint (its log, the databases at that moment, before anyone took
// over), notes it in the report, and returns the judge of the drill's
// verification.
type evidence func(ctx context.Context, r *drillRun, exit Exit) judge

// judge lists how the verification shows that the fault was not
// exercised; none means it was.
type judge func(ctx context.Context, v *Verification) []string

// collectEvidence runs the drill's evidence function on what the process
// that died at its failpoint left behind, and keeps its judge for after
// the verification.
func (r *drillRun) collectEvidence(ctx context.Context, exit Exit) {
	if r.d.evidence == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r.judge = r.d.evidence(ctx, r, exit)
}

// orphansSentAgain is the evidence of a relay that died after Kafka
// acknowledged its batch, before marking it (relay.after_ack_before_mark,
// stream.after_ack_before_checkpoint): every event of the batch is
// published after the takeover and on the topic more than once, and the
// inbox dropped every copy sent again.
func orphansSentAgain(_ context.Context, r *drillRun, exit Exit) judge {
	return r.orphans(exit, true)
}

// orphansSentOnce is the evidence of a relay that died with a batch it
// had claimed or read but not sent (relay.after_claim, stream.after_read):
// every event of the batch is published after the takeover, exactly once.
func orphansSentOnce(_ context.Context, r *drillRun, exit Exit) judge {
	return r.orphans(exit, false)
}

// orphans reads the batch the dead relay had in hand from its crash line
// (a claim writes nothing to the rows, so the log is the record) and
// judges what became of it; acked says whether Kafka had acknowledged it.
func (r *drillRun) orphans(exit Exit, acked bool) judge {
	p, d := r.pipeline, r.d
	deadID := RelayID(d.target, 1)
	logText, err := os.ReadFile(exit.Log)
	if err != nil {
		r.faultNote = append(r.faultNote, "orphaned events: "+err.Error())
		return nil
	}
	orphans := failpoint.EventsAtCrash(string(logText))
	p.note("%s died with %d events in hand", deadID, len(orphans))
	r.faultNote = append(r.faultNote, fmt.Sprintf("%s died with %d events in hand", deadID, len(orphans)))
	return func(ctx context.Context, v *Verification) []string {
		if len(orphans) == 0 {
			return []string{"the relay died holding no event"}
		}
		var out []string
		sentTwice, sentOnce, retaken := 0, 0, 0
		for _, id := range orphans {
			switch v.Topic.Copies[id] {
			case 0:
			case 1:
				sentOnce++
			default:
				sentTwice++
			}
			var published bool
			if err := p.ordersDB.QueryRowContext(ctx, p.sql("SELECT "+verify.PublishedSQL+" FROM outbox_events WHERE id = ?"), id).Scan(&published); err == nil && published {
				retaken++ // the dead relay never marked anything after its failpoint
			}
		}
		r.rep.Injection.Notes = append(r.rep.Injection.Notes, fmt.Sprintf("of the %d orphaned events: %d published after the takeover; %d on the topic twice or more, %d once",
			len(orphans), retaken, sentTwice, sentOnce))
		if retaken != len(orphans) {
			out = append(out, fmt.Sprintf("only %d of %d orphaned events were published after the takeover", retaken, len(orphans)))
		}
		if !acked {
			if sentOnce != len(orphans) {
				out = append(out, fmt.Sprintf("%s: %d of %d orphaned events are on the topic exactly once", d.failpoint, sentOnce, len(orphans)))
			}
			return out
		}
		// Kafka had acknowledged them: the takeover sent them again.
		if sentTwice != len(orphans) {
			out = append(out, fmt.Sprintf("after_ack: %d of %d orphaned events are on the topic more than once", sentTwice, len(orphans)))
		}
		// The consumer ran throughout, so its count is exact: every copy
		// sent again was dropped by the inbox.
		if r.rep.DuplicatesAbsorbed < int64(v.Topic.Duplicates) {
			out = append(out, fmt.Sprintf("after_ack: the inbox dropped %d records, the topic holds %d duplicates", r.rep.DuplicatesAbsorbed, v.Topic.Duplicates))
		}
		return out
	}
}

// inboxDroppedRedelivery is the evidence of a consumer that died after its
// database commit, before the offset commit
// (consumer.after_commit_before_offset): after the restart the inbox
// dropped at least one redelivered record.
func inboxDroppedRedelivery(ctx context.Context, r *drillRun, _ Exit) judge {
	r.notePendingCalls(ctx)
	return func(context.Context, *Verification) []string {
		if r.rep.DuplicatesAbsorbed == 0 {
			return []string{"no redelivered record was dropped by the inbox after the restart"}
		}
		return nil
	}
}

// warehouseCallPending is the evidence of a consumer that died after its
// commit, before calling the warehouse (consumer.after_commit_before_call):
// a call was pending when it died, for the sweeper to make.
func warehouseCallPending(ctx context.Context, r *drillRun, _ Exit) judge {
	pending := r.notePendingCalls(ctx)
	return func(context.Context, *Verification) []string {
		if pending == 0 {
			return []string{"no warehouse call was pending when the consumer died"}
		}
		return nil
	}
}

// notePendingCalls notes and returns how many warehouse calls were
// pending when the consumer died.
func (r *drillRun) notePendingCalls(ctx context.Context) int {
	var pending int
	r.invDB.QueryRowContext(ctx, "SELECT COUNT(*) FROM warehouse_calls WHERE status = 'pending'").Scan(&pending)
	r.faultNote = append(r.faultNote, fmt.Sprintf("at the crash: %d warehouse calls pending", pending))
	return pending
}

// orderCommittedUnanswered is the evidence of the orders API dying after
// committing an order, before answering (orders.after_commit): the order
// its last log line names is in the database (a cancel committed, for a
// cancel) and its client never got a 201.
func orderCommittedUnanswered(_ context.Context, r *drillRun, exit Exit) judge {
	id, kind := lastOrderLogged(exit.Log)
	if id == 0 {
		r.faultNote = append(r.faultNote, "the dead orders process logged no order")
		return func(context.Context, *Verification) []string {
			return []string{"the orders API died without having committed an order"}
		}
	}
	r.pipeline.note("orders#1 died after committing %s of order %d, before answering", kind, id)
	r.faultNote = append(r.faultNote, fmt.Sprintf("orders#1 died after committing %s of order %d, before answering", kind, id))
	return func(_ context.Context, v *Verification) []string {
		return judgeUnansweredOrder(id, kind, r.loadRes.CreatedIDs, v)
	}
}

// judgeUnansweredOrder checks that order id, whose kind ("order created" or
// "order cancelled") committed before the crash, is in the database as
// committed, and that no client got a 201 for its creation.
func judgeUnansweredOrder(id int64, kind string, answered []int64, v *Verification) []string {
	for _, o := range v.Orders.Orders {
		if o.ID != id {
			continue
		}
		if kind == "order cancelled" && o.Status != "cancelled" {
			return []string{fmt.Sprintf("order %d: the cancel committed before the crash is not in the database", id)}
		}
		for _, cid := range answered {
			if cid == id && kind == "order created" {
				return []string{fmt.Sprintf("order %d: the client got an answer, yet the process died before answering", id)}
			}
		}
		return nil
	}
	return []string{fmt.Sprintf("order %d, committed before the crash, is not in the database", id)}
}

// lastOrderLogged returns the order of the orders API's last "order
// created" or "order cancelled" log line.
func lastOrderLogged(logPath string) (int64, string) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	var id int64
	var kind string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			OrderID int64  `json:"order_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Msg == "order created" || line.Msg == "order cancelled") {
			id, kind = line.OrderID, line.Msg
		}
	}
	return id, kind
}
