package cli

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/herald-outbox/herald/kafka"
	"github.com/herald-outbox/herald/store"
)

// relayStatus is a relay that owns buckets (docs/design.md, section 4.1).
type relayStatus struct {
	RelayID string `json:"relay_id"`
	Buckets int    `json:"buckets"`
	// LeaseLeft is the time until its earliest bucket lease ends unless
	// renewed; negative when it ended (the relay stopped renewing).
	LeaseLeft time.Duration `json:"lease_left_ns"`
}

// streamStatus is the binlog stream (docs/design.md, section 9): absent
// when no relay ever streamed.
type streamStatus struct {
	// Source is "binlog" while a leader's lease runs, "poll" otherwise.
	Source string `json:"source"`
	Leader string `json:"leader,omitempty"`
	Epoch  uint64 `json:"epoch"`
	// LeaseLeft is the time until the leader's lease ends unless renewed;
	// negative when it ended.
	LeaseLeft time.Duration `json:"lease_left_ns"`
	Position  string        `json:"position"`
	// CheckpointAge is the time since the position last moved; 0 before
	// it ever did.
	CheckpointAge time.Duration `json:"checkpoint_age_ns"`
}

// statusReport is `herald status --json`.
type statusReport struct {
	At          time.Time                `json:"at"`
	Backlog     store.Backlog            `json:"backlog"`
	Relays      []relayStatus            `json:"relays"`
	FreeBuckets int                      `json:"free_buckets"`
	Stream      *streamStatus            `json:"stream,omitempty"`
	Quarantined []store.QuarantinedEvent `json:"quarantined"`
	Partitions  []kafka.PartitionOffset  `json:"partitions,omitempty"`
	Lag         []kafka.PartitionLag     `json:"consumer_lag,omitempty"`
	KafkaError  string                   `json:"kafka_error,omitempty"`
}

func newStatusCommand() *cobra.Command {
	var (
		db      dbFlags
		kf      kafkaFlags
		routing routeFlags
		topics  []string
		groups  []string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One screen for the operator: backlog, ages, failures, quarantine, partitions, consumer lag",
		Long: `One screen for the operator: the outbox backlog by state with the oldest
ages, failures by class in the last hour, the oldest quarantined events, and,
from Kafka, the records per partition and the consumer groups' lag on the
topics a relay with the same routing settings publishes to (--topic and
--default-topic, or HERALD_TOPICS and HERALD_DEFAULT_TOPIC, as for herald
relay), or on --topics.

When Kafka does not answer, the database's part is still printed and the
command exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// Kafka's answer is reported, not required, but settings that
			// can never work are the operator's to fix first.
			if _, err := kf.options(); err != nil {
				return err
			}
			if len(topics) == 0 {
				routes, defaultTopic, err := routing.parse()
				if err != nil {
					return err
				}
				topics = liveTopics(routes, defaultTopic)
			} else if err := validateTopicNames(topics); err != nil {
				return err
			}
			conn, err := db.openMigrated(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			st := store.New(conn, db.dialect())
			rep := statusReport{At: time.Now().UTC()}
			if rep.Backlog, err = st.ReadBacklog(ctx); err != nil {
				return err
			}
			if rep.Relays, rep.FreeBuckets, err = relayStatuses(ctx, st); err != nil {
				return err
			}
			if rep.Stream, err = readStreamStatus(ctx, st); err != nil {
				return err
			}
			if rep.Quarantined, err = st.ListQuarantined(ctx, store.QuarantineFilter{Limit: 10}); err != nil {
				return err
			}
			rep.Quarantined = nonNil(rep.Quarantined)
			// Kafka is reported on, not required: the database view is what
			// an operator needs first when the cluster is the problem. The
			// exit code still says the status is incomplete.
			kafkaErr := kafkaStatus(ctx, &kf, topics, groups, &rep)
			if kafkaErr != nil {
				rep.KafkaError = kafkaErr.Error()
			}
			if asJSON {
				if err := writeJSON(cmd, rep); err != nil {
					return err
				}
			} else {
				printStatus(cmd, rep)
			}
			if kafkaErr != nil {
				return fmt.Errorf("the Kafka part of the status is missing: %w", kafkaErr)
			}
			return nil
		},
	}
	env := envFlags{}
	db.register(cmd, env)
	kf.register(cmd, env)
	routing.register(cmd, env)
	cmd.Flags().StringSliceVar(&topics, "topics", nil, "topics to show partitions and lag for (default: the topics of --topic and --default-topic)")
	cmd.Flags().StringSliceVar(&groups, "groups", nil, "consumer groups to show (default: every group reading the topics)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	env["topics"] = "HERALD_STATUS_TOPICS"
	env.bind(cmd)
	return cmd
}

func kafkaStatus(ctx context.Context, kf *kafkaFlags, topics, groups []string, rep *statusReport) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	adm, err := kf.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	if rep.Partitions, err = kafka.EndOffsets(ctx, adm, topics...); err != nil {
		return err
	}
	rep.Lag, err = kafka.GroupLags(ctx, adm, groups, topics...)
	return err
}

// readStreamStatus reads the binlog stream's row.
func readStreamStatus(ctx context.Context, st *store.Store) (*streamStatus, error) {
	l, now, err := st.Stream(ctx)
	if err != nil {
		return nil, err
	}
	if l.Epoch == 0 {
		return nil, nil // no relay ever streamed
	}
	s := &streamStatus{Source: "poll", Leader: l.Leader, Epoch: l.Epoch, Position: l.Position}
	if l.Leader != "" {
		s.LeaseLeft = l.Expires.Sub(now)
		if s.LeaseLeft > 0 {
			s.Source = "binlog"
		}
	}
	if !l.CheckpointedAt.IsZero() {
		s.CheckpointAge = now.Sub(l.CheckpointedAt)
	}
	return s, nil
}

// relayStatuses groups the bucket table by owner.
func relayStatuses(ctx context.Context, st *store.Store) ([]relayStatus, int, error) {
	now, leases, err := st.Buckets(ctx)
	if err != nil {
		return nil, 0, err
	}
	byOwner := map[string]*relayStatus{}
	free := store.BucketCount - len(leases) // rows not created yet: no relay ever ran
	for _, l := range leases {
		if l.Owner == "" {
			free++
			continue
		}
		r := byOwner[l.Owner]
		if r == nil {
			r = &relayStatus{RelayID: l.Owner, LeaseLeft: l.Expires.Sub(now)}
			byOwner[l.Owner] = r
		}
		r.Buckets++
		r.LeaseLeft = min(r.LeaseLeft, l.Expires.Sub(now))
	}
	out := []relayStatus{}
	for _, r := range byOwner {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RelayID < out[j].RelayID })
	return out, free, nil
}

func printStatus(cmd *cobra.Command, rep statusReport) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	b := rep.Backlog
	fmt.Fprintf(w, "herald status at %s\n\n", rep.At.Format(time.RFC3339))
	fmt.Fprintln(w, "OUTBOX BACKLOG\tEVENTS\tOLDEST")
	fmt.Fprintf(w, "  ready (claimable)\t%d\t%s waiting\n", b.Ready, age(b.OldestReadyAge))
	fmt.Fprintf(w, "  backing off\t%d\t\n", b.BackingOff)
	fmt.Fprintf(w, "  held behind their aggregate\t%d\t%d aggregate(s)\n", b.Held, b.HeldAggregates)
	fmt.Fprintf(w, "  (oldest of backing off/held)\t\t%s old\n", age(b.OldestParkedAge))
	fmt.Fprintf(w, "  quarantined\t%d\t%s old\n", b.Quarantined, age(b.OldestQuarantinedAge))
	fmt.Fprintf(w, "  discarded\t%d\t\n", b.Discarded)
	fmt.Fprintf(w, "  published in the last hour\t%d\t\n\n", b.PublishedLastHour)

	if st := rep.Stream; st != nil {
		fmt.Fprintln(w, "STREAM (--source binlog)\t\t")
		switch {
		case st.Source == "binlog":
			fmt.Fprintf(w, "  leader\t%s\tepoch %d, lease %s left\n", st.Leader, st.Epoch, st.LeaseLeft.Round(time.Second))
		case st.Leader != "":
			fmt.Fprintf(w, "  leader\t%s\tEXPIRED %s ago: a standby takes over at its next turn\n", st.Leader, (-st.LeaseLeft).Round(time.Second))
		default:
			fmt.Fprintln(w, "  leader\t(none)\tnobody streams: the polling relays share the buckets")
		}
		fmt.Fprintf(w, "  position\t%s\tcheckpointed %s ago\n\n", st.Position, age(st.CheckpointAge))
	}
	fmt.Fprintln(w, "RELAYS\tBUCKETS\tLEASE")
	for _, r := range rep.Relays {
		lease := "renewed, " + r.LeaseLeft.Round(time.Second).String() + " left"
		if r.LeaseLeft <= 0 {
			lease = "EXPIRED " + (-r.LeaseLeft).Round(time.Second).String() + " ago: taken over at the next turn"
		}
		fmt.Fprintf(w, "  %s\t%d\t%s\n", r.RelayID, r.Buckets, lease)
	}
	if rep.FreeBuckets > 0 {
		fmt.Fprintf(w, "  (no relay)\t%d\tnobody claims these buckets' events\n", rep.FreeBuckets)
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "FAILURES IN THE LAST HOUR\tATTEMPTS\t")
	if len(b.FailuresLastHour) == 0 {
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

	if len(rep.Quarantined) > 0 {
		fmt.Fprintln(w, "QUARANTINED (oldest 10; herald quarantine list)\t\t")
		for _, q := range rep.Quarantined {
			fmt.Fprintf(w, "  %s %s/%s #%d %s\t%s\t%d held behind\n", q.ID, q.AggregateType, q.AggregateID,
				q.AggregateSeq, q.EventType, q.ErrorClass, q.HeldBehind)
		}
		fmt.Fprintln(w)
	}
	if rep.KafkaError != "" {
		fmt.Fprintf(w, "KAFKA: %s\n", rep.KafkaError)
		w.Flush()
		return
	}
	fmt.Fprintln(w, "PARTITIONS (records = end offset)\tRECORDS\t")
	for _, p := range rep.Partitions {
		fmt.Fprintf(w, "  %s/%d\t%d\t\n", p.Topic, p.Partition, p.End)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CONSUMER LAG\tLAG\tCOMMITTED/END")
	if len(rep.Lag) == 0 {
		fmt.Fprintln(w, "  no consumer group reads these topics\t\t")
	}
	totals := map[string]int64{}
	for _, l := range rep.Lag {
		totals[l.Group] += l.Lag
	}
	for _, l := range rep.Lag {
		fmt.Fprintf(w, "  %s %s/%d\t%d\t%d/%d\n", l.Group, l.Topic, l.Partition, l.Lag, l.Committed, l.End)
	}
	groups := make([]string, 0, len(totals))
	for g := range totals {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		fmt.Fprintf(w, "  %s total\t%d\t\n", g, totals[g])
	}
	w.Flush()
}

func age(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}
