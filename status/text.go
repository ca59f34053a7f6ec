package status

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-outbox/herald/store"
)

// WriteText prints the report as `herald status` does: one screen, in
// the order an operator reads it (docs/runbooks/backlog.md).
func (r Report) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	b := r.Backlog
	fmt.Fprintf(w, "herald status at %s\n\n", r.At.Format(time.RFC3339))
	fmt.Fprintln(w, "OUTBOX BACKLOG\tEVENTS\tOLDEST")
	fmt.Fprintf(w, "  ready (claimable)\t%d\t%s old\n", b.Ready, Age(b.OldestReadyAge))
	if b.Streaming > 0 {
		fmt.Fprintf(w, "  of which in the change stream\t%d\tpublished or on their way: the watermark passes them\n", b.Streaming)
	}
	fmt.Fprintf(w, "  backing off\t%d\t\n", b.BackingOff)
	fmt.Fprintf(w, "  held behind their aggregate\t%d\t%d aggregate(s)\n", b.Held, b.HeldAggregates)
	fmt.Fprintf(w, "  (oldest of backing off/held)\t\t%s old\n", Age(b.OldestParkedAge))
	fmt.Fprintf(w, "  quarantined\t%d\t%s old\n", b.Quarantined, Age(b.OldestQuarantinedAge))
	fmt.Fprintf(w, "  discarded\t%d\t\n", b.Discarded)
	fmt.Fprintf(w, "  published in the last hour\t%d\t%s\n\n", b.PublishedLastHour, r.DeliveryDelay.Text())

	if st := r.Stream; st != nil {
		fmt.Fprintf(w, "STREAM (--source %s)\t\t\n", streamSource(st))
		switch {
		case st.Source == "binlog":
			fmt.Fprintf(w, "  leader\t%s\tepoch %d, lease %s left\n", st.Leader, st.Epoch, st.LeaseLeft.Round(time.Second))
		case st.Leader != "":
			fmt.Fprintf(w, "  leader\t%s\tEXPIRED %s ago: a standby takes over at its next turn\n", st.Leader, (-st.LeaseLeft).Round(time.Second))
		default:
			fmt.Fprintln(w, "  leader\t(none)\tnobody streams: the polling relays share the buckets")
		}
		fmt.Fprintf(w, "  position\t%s\tcheckpointed %s ago\n", st.Position, Age(st.CheckpointAge))
		if st.WatermarkAge > 0 {
			fmt.Fprintf(w, "  watermark\t%s behind\tevents written before it are published\n", Age(st.WatermarkAge))
		}
		for _, sl := range st.SlotLines() {
			fmt.Fprintf(w, "  slot %s\t%s retained\t%s\n", sl.Name, sl.Retained, sl.State)
		}
		fmt.Fprintln(w)
	}
	if len(r.CopiedTables) > 0 {
		fmt.Fprintln(w, "COPIED TABLES (their inserts become events; herald migrate unmap stops it)\tTRIGGER\tSINCE")
		for _, c := range r.CopiedTables {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Table, c.Trigger, c.InstalledAt.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "RELAYS\tBUCKETS\tLEASE")
	for _, rl := range r.Relays {
		fmt.Fprintf(w, "  %s\t%d\t%s\n", rl.RelayID, rl.Buckets, rl.LeaseText())
	}
	if r.FreeBuckets > 0 {
		fmt.Fprintf(w, "  (no relay)\t%d\tnobody claims these buckets' events\n", r.FreeBuckets)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "FAILURES IN THE LAST HOUR\tATTEMPTS\t")
	switch {
	case len(b.FailuresLastHour) == 0 && len(r.ConfigurationStops) > 0:
		fmt.Fprintln(w, "  none charged to events (Kafka configuration stops below)\t\t")
	case len(b.FailuresLastHour) == 0:
		fmt.Fprintln(w, "  none\t\t")
	}
	classes := make([]string, 0, len(b.FailuresLastHour))
	for c := range b.FailuresLastHour {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		fmt.Fprintf(w, "  %s\t%d\t\n", c, b.FailuresLastHour[c])
	}
	fmt.Fprintln(w)
	if len(r.ConfigurationStops) > 0 {
		fmt.Fprintln(w, "STOPPED BY KAFKA CONFIGURATION (no attempt charged; docs/runbooks/authentication.md)\tEVENTS\tOLDEST")
		for _, c := range r.ConfigurationStops {
			fmt.Fprintf(w, "  %s\t%d\t%s old\n", c.Class, c.Events, Age(c.OldestAge))
		}
		fmt.Fprintln(w)
	}

	if len(r.Quarantined) > 0 {
		fmt.Fprintf(w, "QUARANTINED (oldest %d; herald quarantine list)\t\t\n", QuarantineShownDefault)
		for _, q := range r.Quarantined {
			fmt.Fprintf(w, "  %s %s/%s #%d %s\t%s\t%d held behind\n", q.ID, q.AggregateType, q.AggregateID,
				q.AggregateSeq, q.EventType, q.ErrorClass, q.HeldBehind)
		}
		fmt.Fprintln(w)
	}
	if r.KafkaError != "" {
		fmt.Fprintf(w, "KAFKA: %s\n", r.KafkaError)
		return w.Flush()
	}
	fmt.Fprintln(w, "PARTITIONS (records = end offset)\tRECORDS\t")
	for _, p := range r.Partitions {
		fmt.Fprintf(w, "  %s/%d\t%d\t\n", p.Topic, p.Partition, p.End)
	}
	for _, t := range r.MissingTopics {
		fmt.Fprintf(w, "  %s\tno such topic\tthe relay cannot publish to it: herald topics create %s\n", t, t)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CONSUMER LAG\tLAG\tCOMMITTED/END")
	if len(r.Lag) == 0 {
		fmt.Fprintln(w, "  no consumer group reads these topics\t\t")
	}
	for _, l := range r.Lag {
		fmt.Fprintf(w, "  %s %s/%d\t%d\t%d/%d\n", l.Group, l.Topic, l.Partition, l.Lag, l.Committed, l.End)
	}
	for _, g := range r.GroupTotals() {
		fmt.Fprintf(w, "  %s total\t%d\t\n", g.Group, g.Lag)
	}
	return w.Flush()
}

// LeaseText says how a relay's lease stands, in status's words.
func (r Relay) LeaseText() string {
	if r.Expired() {
		return "EXPIRED " + (-r.LeaseLeft).Round(time.Second).String() + " ago: taken over at the next turn"
	}
	return "renewed, " + r.LeaseLeft.Round(time.Second).String() + " left"
}

// GroupLag is a consumer group's lag summed over the partitions shown.
type GroupLag struct {
	Group string
	Lag   int64
}

// GroupTotals sums the lag by group, by group name.
func (r Report) GroupTotals() []GroupLag {
	totals := map[string]int64{}
	for _, l := range r.Lag {
		totals[l.Group] += l.Lag
	}
	out := make([]GroupLag, 0, len(totals))
	for g, n := range totals {
		out = append(out, GroupLag{g, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// Age renders an age to the second; "-" for none.
func Age(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}

// Error is what `herald status --json` prints when there is no report at
// all (the database unreachable or not migrated): a JSON object, so a
// script reading the output always gets one.
type Error struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// NewError returns the JSON error object for err.
func NewError(err error) Error {
	return Error{At: time.Now().UTC(), Error: strings.TrimSpace(err.Error())}
}

// streamSource names the source a stream report is about.
func streamSource(st *Stream) string {
	if st.Source != "poll" {
		return st.Source
	}
	if len(st.Slots) > 0 || strings.HasPrefix(st.Position, walPositionPrefix) {
		return "wal"
	}
	return "binlog"
}

// SlotText says what state a replication slot is in, for an operator.
func SlotText(s store.ReplicationSlot) string {
	var state string
	switch {
	case s.Lost():
		return "INVALIDATED: its WAL is gone; the next --source wal leader sweeps the outbox and creates it anew"
	case s.Active:
		state = fmt.Sprintf("streaming (pid %d)", s.ActivePID)
	default:
		state = "not streaming: the WAL it holds grows until a --source wal relay reads it, or herald stream drop removes it"
	}
	state += fmt.Sprintf(", confirmed %s behind the server", Bytes(s.LagBytes))
	switch {
	case s.WALStatus == "unreserved":
		state += "; PAST max_slot_wal_keep_size: invalidated at the next checkpoint"
	case s.SafeWALBytes >= 0:
		state += fmt.Sprintf("; %s more before max_slot_wal_keep_size invalidates it", Bytes(s.SafeWALBytes))
	}
	return state
}

// Bytes prints a size in bytes in binary units ("-" when unknown).
func Bytes(n int64) string {
	switch {
	case n < 0:
		return "-"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// SourceName is the source a stream report is about: binlog or wal.
func (s *Stream) SourceName() string { return streamSource(s) }

// Streaming says a leader's lease runs.
func (s *Stream) Streaming() bool { return s.Source != "poll" }

// SlotLine is one replication slot as an operator reads it.
type SlotLine struct {
	Name, Retained, State string
	// Bad: invalidated, or past max_slot_wal_keep_size.
	Bad bool
}

// SlotLines are the stream's slots for display, with a line for herald's
// missing one.
func (s *Stream) SlotLines() []SlotLine {
	var out []SlotLine
	for _, sl := range s.Slots {
		out = append(out, SlotLine{Name: sl.Name, Retained: Bytes(sl.RetainedBytes), State: SlotText(sl),
			Bad: sl.Lost() || sl.WALStatus == "unreserved"})
	}
	if len(out) == 0 && strings.HasPrefix(s.Position, walPositionPrefix) {
		out = append(out, SlotLine{Name: "(none)", State: "MISSING: the next --source wal leader sweeps the outbox, then creates it and streams", Bad: true})
	}
	return out
}
